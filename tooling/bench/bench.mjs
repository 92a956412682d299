#!/usr/bin/env node
// devexit's benchmarks (issue 13): every figure next to its baseline, measured in the same run,
// interleaved, medians quoted. `pnpm bench` prints a table and writes bench-results/latest.json;
// `--quick` is the CI run (well under 2 minutes); `--only=<section,...>` runs some sections.
// Sections: hotpath, startup, exit, cpu, wgpu, registration.
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { benchDir, fmt, isLoaded, machine } from './lib/common.mjs';
import cpu from './lib/cpu.mjs';
import exit from './lib/exit.mjs';
import hotpath from './lib/hotpath.mjs';
import registration from './lib/registration.mjs';
import startup from './lib/startup.mjs';
import wgpu from './lib/wgpu.mjs';

const quick = process.argv.includes('--quick');
const only = process.argv
  .find((a) => a.startsWith('--only='))
  ?.slice('--only='.length)
  .split(',');
const sections = { hotpath, startup, exit, cpu, wgpu, registration };

const started = performance.now();
const atStart = machine();
const rows = [];
for (const [name, run] of Object.entries(sections)) {
  if (only && !only.includes(name)) continue;
  const t = performance.now();
  const got = await run({ quick });
  for (const r of got) rows.push({ section: name, ...r });
  process.stderr.write(`bench: ${name} done in ${((performance.now() - t) / 1000).toFixed(1)} s\n`);
}
const loadEnd = loadavg().map((x) => Math.round(x * 100) / 100);
const loaded = isLoaded(atStart.loadavg[0], atStart.cores) || isLoaded(loadEnd[0], atStart.cores);
const results = {
  date: new Date().toISOString(),
  quick,
  seconds: Math.round((performance.now() - started) / 100) / 10,
  machine: { ...atStart, loadavgEnd: loadEnd, loaded },
  rows,
};

const table = [['figure', 'value', 'baseline', 'ratio', 'target', 'met']];
for (const r of rows) {
  table.push([
    r.name,
    r.value === null ? 'not measured' : `${fmt(r.value)} ${r.unit}`,
    r.baseline ? `${fmt(r.baseline)} (${r.baselineName})` : '—',
    r.ratio ? `${r.ratio.toFixed(2)}×` : '—',
    r.target ?? '(for reference)',
    r.met === null ? '—' : r.met ? 'yes' : 'NO',
  ]);
}
const widths = table[0].map((_, i) => Math.max(...table.map((t) => t[i].length)));
for (const [i, t] of table.entries()) {
  console.log(
    t
      .map((c, j) => c.padEnd(widths[j]))
      .join('  ')
      .trimEnd(),
  );
  if (i === 0) console.log(widths.map((w) => '-'.repeat(w)).join('  '));
}
console.log(
  `\n${atStart.cpu}, ${atStart.cores} cores, Node ${atStart.node}; load average ${atStart.loadavg[0]} at the start, ` +
    `${loadEnd[0]} at the end${loaded ? ' (LOADED: other processes shared the cores; wall-time figures are noisier)' : ''}; ` +
    `${results.seconds} s${quick ? ' (--quick)' : ''}`,
);
for (const r of rows) if (r.detail) console.log(`- ${r.name}: ${r.detail}`);

const out = join(benchDir, 'bench-results');
mkdirSync(out, { recursive: true });
writeFileSync(join(out, 'latest.json'), `${JSON.stringify(results, null, 2)}\n`);
console.log(`\nwrote ${join(out, 'latest.json')}`);
