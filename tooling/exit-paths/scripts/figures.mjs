#!/usr/bin/env node
// Prints figures for the exit engine's rows: runs, crashes, exit codes, ms from the exit call to
// the end of the child (median and max), which closes ran. Guard on and guard off; with
// `--tree <dir>`, against another checkout's build (e.g. an older commit, to show a row fails
// there). `--runs N` (default 20), `--build glibc|portable`.
//
//   node scripts/figures.mjs
//   node scripts/figures.mjs --tree /tmp/devexit-old
import { copyFileSync, mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const here = join(import.meta.dirname, '..');
const tree = option('--tree', join(here, '..', '..'));
const runs = Number(option('--runs', 20));
const build = option('--build', 'glibc');
const require = createRequire(join(here, 'package.json'));
const { runMany, crashed, exitLatency, closeCounts } = require('@devexit/testkit');
const addon =
  build === 'portable'
    ? join(here, 'portable', 'build', 'Release', 'devexit_native.node')
    : join(tree, 'packages', 'native', 'build', 'Release', 'devexit_native.node');
const fixture = join(tree, 'tooling', 'exit-paths', 'fixtures', 'engine.cjs');

const fast = { DEVEXIT_TIMEOUT_MS: '500' };
const rows = [
  ['stuck-js-close', fast],
  ['endless-js-close', fast],
  ['native-close-exits', {}],
  ['js-close-exits', {}],
  ['really-exit-js-close', {}],
  ['listener-exits', {}],
  ['listener-throws', {}],
  ['promise-close', {}],
  ['two-copies-slow-close', fast, true],
  ['native-exit-main', {}],
];

const count = (values) => {
  const out = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return Object.entries(out)
    .map(([k, n]) => `${k} x${n}`)
    .join(', ');
};

function describe(results) {
  const latency = results
    .map(exitLatency)
    .filter((v) => v !== undefined)
    .sort((a, b) => a - b);
  const closes = count(
    results.map(
      (r) =>
        Object.entries(closeCounts(r.report))
          .map(([k, n]) => (n === 1 ? k : `${k}x${n}`))
          .sort()
          .join(' ') || 'none',
    ),
  );
  const failed = count(
    results.flatMap((r) =>
      r.report.filter((e) => e.outcome !== 'ok').map((e) => `${e.service}:${e.outcome}`),
    ),
  );
  return {
    crashes: results.filter((r) => crashed(r)).length,
    ended: count(results.map((r) => (r.timedOut ? 'hung (killed at 15 s)' : (r.signal ?? `code ${r.code}`)))),
    exitMs: latency.length
      ? `median ${latency[latency.length >> 1].toFixed(0)}, max ${latency[latency.length - 1].toFixed(0)}`
      : '-',
    closes,
    notOk: failed || '-',
  };
}

console.log(`tree ${tree}, ${build} build, ${runs} runs per cell`);
for (const [row, env, secondCopy] of rows) {
  const argv = [row];
  if (secondCopy) {
    const copy = join(mkdtempSync(join(tmpdir(), 'devexit-copy-')), 'devexit_native.node');
    copyFileSync(addon, copy);
    argv.push(copy);
  }
  const base = { script: fixture, args: argv, timeoutMs: 15_000 };
  const nativePath = build === 'portable' ? { DEVEXIT_NATIVE_PATH: addon } : {};
  for (const [label, extra] of [
    ['guard on ', {}],
    ['guard off', { DEVEXIT_GUARD: '0' }],
  ]) {
    const results = await runMany(runs, { ...base, env: { ...env, ...nativePath, ...extra } });
    const d = describe(results);
    console.log(
      `${row.padEnd(22)} ${label}  crashes ${String(d.crashes).padStart(2)}/${runs}  ${d.ended}  exit ms ${d.exitMs}\n` +
        `${''.padEnd(34)}closes: ${d.closes}\n${''.padEnd(34)}not ok: ${d.notOk}`,
    );
  }
}
