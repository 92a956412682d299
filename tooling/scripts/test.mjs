#!/usr/bin/env node
// `pnpm test [turbo options]`: every package's tests (turbo run test, one package at a time), its
// output passed through as it comes, then one line totalling every package's vitest summary:
// `pnpm test: 411 passed, 0 failed, 86 skipped (14 packages)`. turbo runs each package's vitest on
// its own and cannot total them. Exits with turbo's status.
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stripVTControlCharacters } from 'node:util';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
// `pnpm test -- --filter=@devexit/core`: pnpm passes the `--` on.
const args = process.argv[2] === '--' ? process.argv.slice(3) : process.argv.slice(2);
const started = Date.now();
const turbo = spawn(
  join(root, 'node_modules', '.bin', 'turbo'),
  ['run', 'test', '--concurrency=1', ...args],
  { cwd: root, stdio: ['inherit', 'pipe', 'pipe'], env: { ...process.env, TURBO_TELEMETRY_DISABLED: '1' } },
);

const totals = { passed: 0, failed: 0, skipped: 0, todo: 0 };
let summaries = 0;
let partial = '';
// vitest's summary, after turbo's package prefix: "@devexit/core:test:       Tests  12 passed | 1 skipped (13)".
const SUMMARY = /\bTests\s+((?:\d+ \w+(?: \| )?)+)\s*\(\d+\)/;
function scan(text) {
  const lines = (partial + text).split('\n');
  partial = lines.pop() ?? '';
  for (const raw of lines) {
    const line = stripVTControlCharacters(raw);
    const m = SUMMARY.exec(line);
    if (!m || /Test Files/.test(line)) continue;
    summaries++;
    for (const part of m[1].split('|')) {
      const [n, kind] = part.trim().split(/\s+/);
      if (kind in totals) totals[kind] += Number(n);
    }
  }
}
turbo.stdout.on('data', (d) => {
  process.stdout.write(d);
  scan(d.toString('utf8'));
});
turbo.stderr.on('data', (d) => process.stderr.write(d));
turbo.on('error', (err) => {
  console.error(`pnpm test: cannot run turbo: ${err.message}`);
  process.exitCode = 1;
});
turbo.on('close', (code, signal) => {
  scan('\n');
  const todo = totals.todo ? `, ${totals.todo} todo` : '';
  const minutes = ((Date.now() - started) / 60_000).toFixed(1);
  const status = code === 0 ? '' : `; turbo exited ${code ?? signal}`;
  console.log(
    `pnpm test: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped${todo} (${summaries} vitest runs, ${minutes} min)${status}`,
  );
  process.exitCode = code ?? 1;
});
