import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// The registry's key table (addon/key_table.h) against a plain model: random inserts, duplicate
// inserts, erases and clears, through its re-indexes and compactions. Built here with the
// compiler that builds the addon, under AddressSanitizer and UBSan where the compiler has them.
const here = __dirname;
const dir = mkdtempSync(join(tmpdir(), 'devexit-key-table-'));
// The sanitizer jobs preload their runtime into every child: not into the compiler, and the test
// program links its own.
const env = { ...process.env };
delete env.LD_PRELOAD;

// `scalar`: the filter's scalar code only (key_filter.h uses AVX2 where the CPU has it).
function build(sanitize: boolean, scalar = false): { ok: boolean; exe: string; stderr: string } {
  const exe = join(dir, `key_table${sanitize ? '_asan' : ''}${scalar ? '_scalar' : ''}`);
  const flags = [
    ...(sanitize ? ['-fsanitize=address,undefined', '-fno-sanitize-recover=undefined', '-g'] : []),
    ...(scalar ? ['-DDEVEXIT_KEY_FILTER_AVX2=0'] : []),
  ];
  const r = spawnSync(
    'c++',
    [
      '-std=c++17',
      '-O1',
      '-Wall',
      '-Wextra',
      '-Werror',
      ...flags,
      `-I${join(here, '..', 'addon')}`,
      `-I${join(here, '..', 'include')}`,
      join(here, 'key_table_test.cc'),
      '-o',
      exe,
    ],
    { encoding: 'utf8', env },
  );
  return { ok: r.status === 0, exe, stderr: r.stderr };
}

describe('key table (addon/key_table.h)', () => {
  // Each filter code path: the default build (AVX2 on a CPU that has it; the test also checks it
  // against the scalar code block by block) and the scalar-only build.
  for (const scalar of [false, true]) {
    it(`agrees with a model through inserts, duplicates, erases, clears, re-indexes and compactions${scalar ? " (the filter's scalar code only)" : ''}`, () => {
      let b = build(true, scalar);
      if (!b.ok && /sanitize|asan|ubsan/i.test(b.stderr)) {
        // A toolchain without the sanitizer runtimes still runs the model check, without them.
        console.warn(`key table test: no sanitizer build (${b.stderr.trim().split('\n')[0]}); plain build`);
        b = build(false, scalar);
      }
      expect(b.ok, b.stderr).toBe(true);
      const r = spawnSync(b.exe, [], { encoding: 'utf8', timeout: 120_000, env });
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      expect(r.stdout).toMatch(/^ok \d+\n$/);
    }, 180_000);
  }
});
