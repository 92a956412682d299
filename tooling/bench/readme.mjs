#!/usr/bin/env node
// Rewrites the performance table of the root README (between <!-- bench:start --> and
// <!-- bench:end -->) from a bench results file: node readme.mjs [results.json], default
// bench-results/latest.json. Keeps a copy of the file it used as readme-results.json, so that
// the table can be regenerated from what is committed.
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { benchDir, fmt } from './lib/common.mjs';

const source = resolve(process.argv[2] ?? join(benchDir, 'bench-results', 'latest.json'));
let results;
try {
  results = JSON.parse(readFileSync(source, 'utf8'));
} catch (err) {
  // A fresh clone has no bench-results/ yet: say what to run instead of a stack trace.
  const why = err.code === 'ENOENT' ? 'no such file' : err.message;
  console.error(
    `readme: cannot read ${source}: ${why}. Run \`pnpm bench\` first, or name a results file: ` +
      '`node readme.mjs readme-results.json` regenerates the table from the results it was made from.',
  );
  process.exit(1);
}
const readmePath = join(benchDir, '..', '..', 'README.md');
const START = '<!-- bench:start -->';
const END = '<!-- bench:end -->';

const m = results.machine;
const cell = (s) => String(s).replaceAll('|', '\\|');
const lines = [
  START,
  `Measured ${results.date.slice(0, 10)} by \`pnpm bench${results.quick ? ' --quick' : ''}\` on ${m.cpu}, ` +
    `${m.cores} cores, ${m.memoryGiB} GiB, Node ${m.node}; load average ${m.loadavg[0]} at the start and ` +
    `${m.loadavgEnd[0]} at the end` +
    (m.loaded
      ? ': **loaded** (other processes shared the cores), so wall-time figures are noisier than on an idle machine.'
      : '.'),
  '',
  '| figure | value | baseline | ratio | target | met |',
  '|---|---|---|---|---|---|',
];
for (const r of results.rows) {
  lines.push(
    `| ${cell(r.name)} | ${r.value === null ? 'not measured' : `${fmt(r.value)} ${r.unit}`} | ` +
      `${r.baseline ? `${fmt(r.baseline)} (${cell(r.baselineName)})` : '—'} | ` +
      `${r.ratio ? `${r.ratio.toFixed(2)}×` : '—'} | ${cell(r.target ?? 'for reference')} | ` +
      `${r.met === null ? '—' : r.met ? 'yes' : '**no**'} |`,
  );
}
lines.push('', 'How each figure was taken:', '');
for (const r of results.rows) if (r.detail) lines.push(`- ${cell(r.name)}: ${r.detail}`);
lines.push(END);

const readme = readFileSync(readmePath, 'utf8');
const a = readme.indexOf(START);
const b = readme.indexOf(END);
if (a < 0 || b < a) throw new Error(`README.md has no ${START} ... ${END} section`);
writeFileSync(readmePath, readme.slice(0, a) + lines.join('\n') + readme.slice(b + END.length));
copyFileSync(source, join(benchDir, 'readme-results.json'));
console.log(`README.md: performance table from ${source} (${results.rows.length} figures)`);
