// Exit: its cost with idle services, its latency with queued work, and closes in parallel.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchDir, fixture, interleave, median, nodeJson, row, timedExit } from './common.mjs';

const require = createRequire(import.meta.url);

export default async function exit({ quick }) {
  const rows = [];

  // 1. 64 devices x 4 idle services: the exit latency (process.exit() -> the parent sees the child
  // gone) next to a bare node's, interleaved; the same with a service thread behind each service.
  const runs = quick ? 15 : 61;
  const e = await interleave(runs, {
    bare: () => timedExit([fixture('exit64.cjs'), 'bare']),
    loaded: () => timedExit([fixture('exit64.cjs'), 'loaded']),
    services: () => timedExit([fixture('exit64.cjs'), 'services']),
    signalExit: () => timedExit([fixture('exit64.cjs'), 'signal-exit']),
    exitHook: () => timedExit([fixture('exit64.cjs'), 'exit-hook']),
    threads: () => timedExit([fixture('exit64.cjs'), 'threads']),
  });
  const ms = (k) => median(e[k].map((x) => x.exitMs));
  // Inside the child: how long its 'exit' event took, and how often its threads slept meanwhile.
  const event = (k) => {
    const got = e[k].map((x) => /exitEvent (\S+) (\S+)/.exec(x.out)).filter(Boolean);
    return { ms: median(got.map((g) => Number(g[1]))), sleeps: median(got.map((g) => Number(g[2]))) };
  };
  const inChild = (k) => `${event(k).ms.toFixed(2)} ms, ${event(k).sleeps} sleep(s)`;
  rows.push(
    row({
      name: 'exit with 64 devices × 4 idle services',
      value: ms('services'),
      unit: 'ms',
      baseline: ms('bare'),
      baselineName: 'a bare node exit',
      target: '≤ 1.1× baseline',
      met: (r) => r.ratio <= 1.1,
      detail:
        `process.exit() to the parent seeing the child gone, median of ${runs} each, interleaved; ` +
        `@devexit/native loaded with nothing registered: ${ms('loaded').toFixed(2)} ms; one hook of ` +
        `signal-exit: ${ms('signalExit').toFixed(2)} ms, of exit-hook: ${ms('exitHook').toFixed(2)} ms; ` +
        `the 'exit' event in the child (devexit's layer in it): bare ${inChild('bare')}, loaded ${inChild('loaded')}, ` +
        `services ${inChild('services')}`,
    }),
    row({
      name: 'exit with 64 devices × 4 idle service threads',
      value: ms('threads'),
      unit: 'ms',
      baseline: ms('bare'),
      baselineName: 'a bare node exit',
      detail:
        `as above, a thread of the shared runtime (devexit_service.hpp) behind each service, stopped and joined ` +
        `by its close; the 'exit' event in the child: ${inChild('threads')} ` +
        `(${(event('threads').sleeps / 256).toFixed(2)} per service: the closing thread waiting for each service's)`,
    }),
  );

  // 2. process.exit with 1,000 launches queued behind a running one (cpu, a user kernel spinning
  // 50 ms): the exit waits for the running command only.
  const dir = mkdtempSync(join(tmpdir(), 'devexit-bench-'));
  try {
    const lib = join(dir, 'libspin.so');
    const include = join(require.resolve('@devexit/cpu/package.json'), '..', 'include');
    execFileSync(process.env.CC ?? 'cc', [
      '-shared',
      '-fPIC',
      '-O2',
      `-I${include}`,
      '-o',
      lib,
      join(benchDir, 'kernels', 'spin.c'),
    ]);
    const us = '50000';
    const q = await interleave(quick ? 3 : 7, {
      command: () => nodeJson([fixture('queuedExit.cjs'), 'measure', lib, us]).commandMs,
      exit: async () => (await timedExit([fixture('queuedExit.cjs'), 'exit', lib, us])).exitMs,
    });
    rows.push(
      row({
        name: 'exit at process.exit with 1,000 queued launches (cpu)',
        value: median(q.exit),
        unit: 'ms',
        baseline: median(q.command),
        baselineName: 'the running command (one launch, 50 ms)',
        target: '≤ baseline + 5 ms (queued work dropped)',
        met: (r) => r.value <= r.baseline + 5,
        detail: `exit called ~10 ms into the running command; running all 1,001 would take ${((1001 * median(q.command)) / 1000).toFixed(0)} s; median of ${q.exit.length}`,
      }),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  // 3. Parallel close: 8 devices whose close takes 100 ms, next to the same 8 closes one after
  // another (on one device).
  const p = await interleave(quick ? 3 : 7, {
    parallel: () => nodeJson([fixture('closeAll.cjs'), 'parallel']).ms,
    sequential: () => nodeJson([fixture('closeAll.cjs'), 'sequential']).ms,
  });
  const one = median(p.sequential) / 8;
  rows.push(
    row({
      name: 'parallel close, 8 devices × 100 ms',
      value: median(p.parallel),
      unit: 'ms',
      baseline: one,
      baselineName: 'one close (the 8 run one after another, / 8)',
      target: '≤ 1.3 × 100 ms',
      met: (r) => r.value <= 130,
      detail: `one after another: ${median(p.sequential).toFixed(0)} ms; median of ${p.parallel.length}`,
    }),
  );
  return rows;
}
