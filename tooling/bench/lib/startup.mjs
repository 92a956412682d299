// Start-up: what require('@devexit/core') and require('@devexit/native') add to a program.
import { fixture, interleave, median, nodeJson, pairedMedian, row } from './common.mjs';

const load = (spec) => nodeJson([fixture('load.cjs'), spec]);

export default async function startup({ quick }) {
  const runs = quick ? 7 : 21;
  const s = await interleave(runs, {
    core: () => load('@devexit/core'),
    signalExit: () => load('signal-exit'),
    exitHook: () => nodeJson([fixture('load.mjs'), 'exit-hook']),
    floor: () => load('signal-exit/signals'),
  });
  const cpu = (k) => median(s[k].map((x) => x.cpuMs));
  const wall = (k) => median(s[k].map((x) => x.wallMs));
  const detail = (k) => `${k}: ${cpu(k).toFixed(2)} ms CPU, ${wall(k).toFixed(2)} ms wall`;
  const floor = cpu('floor');
  const rows = [
    row({
      name: "require('@devexit/core')",
      value: cpu('core'),
      unit: 'ms CPU',
      baseline: cpu('signalExit'),
      baselineName: "require('signal-exit')",
      target: '≤ baseline, and ≤ 1 ms over the floor of requiring any package',
      met: (r) => r.value <= r.baseline && r.value - floor <= 1,
      detail:
        `median of ${runs} processes each, interleaved, after the loader's first use; ` +
        `floor (signal-exit/signals, a 1.5 KB package export) ${floor.toFixed(2)} ms CPU, so core adds ` +
        `${(cpu('core') - floor).toFixed(2)} ms over it; wall: core ${wall('core').toFixed(2)} ms, ` +
        `signal-exit ${wall('signalExit').toFixed(2)} ms; ${detail('exitHook')} (import: it is ESM only)`,
    }),
  ];

  // A whole process: node's start-up, the require, and the exit (devexit's exit layer included);
  // beside it, where the added time goes, step by step (fixtures/phases.cjs).
  const w = await interleave(runs, {
    bare: () => nodeJson([fixture('whole.cjs')]),
    native: () => nodeJson([fixture('whole.cjs'), '@devexit/native']),
    phases: () => nodeJson([fixture('phases.cjs')]),
  });
  const med = (k, field) => median(w[k].map((x) => x[field]));
  // The process's added CPU time is the median of the paired differences (each native run against
  // the bare run beside it); the two medians are in the detail.
  const bare = med('bare', 'cpuMs');
  const added = pairedMedian(w.bare, w.native, 'cpuMs');
  const native = bare + added;
  const phase = (name) => median(w.phases.map((x) => x[name].cpuMs));
  const phaseFaults = (name) => median(w.phases.map((x) => x[name].faults));
  const steps = [
    ['resolve', "resolving '@devexit/native' (the process's first package resolution; no exports map)"],
    ['addon', 'the addon (dlopen, initialisers, module init)'],
    ['native', 'the rest of @devexit/native (loader, bridge, hand-over; @devexit/core not loaded)'],
    ['exit', 'the JS exit layer at exit'],
  ];
  rows.push(
    row({
      name: "a process that requires '@devexit/native'",
      value: native,
      unit: 'ms CPU',
      baseline: bare,
      baselineName: "a bare node process (node -e '')",
      target: '≤ 1.06× baseline and ≤ baseline + 3 ms',
      met: (r) => r.ratio <= 1.06 && r.value - r.baseline <= 3,
      detail:
        `adds ${added.toFixed(2)} ms CPU (median of ${runs} paired differences, each run against the bare one beside it; ` +
        `the medians: ${med('native', 'cpuMs').toFixed(1)} vs ${bare.toFixed(1)} ms) and ${pairedMedian(w.bare, w.native, 'faults')} ` +
        `page faults (bare: ${med('bare', 'faults')}); CPU time of the whole process at its 'exit' event, interleaved; wall ${med('native', 'wallMs').toFixed(1)} ms vs ${med('bare', 'wallMs').toFixed(1)} ms; where it goes ` +
        `(ms CPU, page faults): ${steps.map(([k, what]) => `${what} ${phase(k).toFixed(2)}, ${phaseFaults(k)}`).join('; ')}`,
    }),
  );
  return rows;
}
