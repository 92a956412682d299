// The real exit race on the real runtime: the compiler service's thread initialises HIP itself
// and keeps calling it (hipGetDeviceCount, diagnostic keepalive) while the process exits.
import { join } from 'node:path';
import { type ChildResult, crashed, outcomes, runMany, summary } from '@devexit/testkit';
import { describe, expect, it } from 'vitest';
import { realRuntime } from './realRuntime.js';

const RUNS = 30;
const fixture = join(__dirname, 'fixtures', 'raceChild.cjs');
// ROCm's teardown racing the thread often corrupts the heap silently on the process.exit paths
// (0/20 detected); without tcache and fastbins glibc detects it at the next free and aborts.
// Both arms of the test run with it.
const env = {
  DEVEXIT_HIP_LIBRARY: undefined,
  GLIBC_TUNABLES: 'glibc.malloc.mxfast=0:glibc.malloc.tcache_count=0',
};

const PATHS = [
  { path: 'natural', code: 0 },
  { path: 'exit', code: 0 },
  { path: 'uncaught', code: 1 },
  { path: 'sigint', code: 130, signalOnReady: 'SIGINT' as const },
] as const;

const child = (path: string, guard: boolean, signalOnReady?: NodeJS.Signals) => ({
  script: fixture,
  args: [path],
  env: { ...env, ...(guard ? {} : { DEVEXIT_GUARD: '0' }) },
  timeoutMs: 20_000,
  ...(signalOnReady ? { signalOnReady } : {}),
});

const tell = (r: ChildResult) =>
  `code=${r.code} signal=${r.signal} timedOut=${r.timedOut}\nstdout: ${r.stdout.slice(-300)}\nstderr: ${r.stderr.slice(-800)}`;

describe(`hip exit race on the real libamdhip64 (${RUNS} runs per path)`, () => {
  for (const p of PATHS) {
    it(`${p.path}: with the guard, exit ${p.code}, 0 crashes, compiler closed once; with DEVEXIT_GUARD=0, at least one crash`, async (ctx) => {
      const { missing } = await realRuntime();
      if (missing) ctx.skip(missing);
      const signal = 'signalOnReady' in p ? p.signalOnReady : undefined;
      const on = await runMany(RUNS, child(p.path, true, signal));
      const off = await runMany(RUNS, child(p.path, false, signal));
      // Under AddressSanitizer the teardown race is a report (exit code 1), not a signal.
      const hit = (r: ChildResult) => crashed(r) || /ERROR: AddressSanitizer/.test(r.stderr);
      const crashesOn = on.filter(hit).length;
      const crashesOff = off.filter(hit).length;
      console.log(
        `hip exit race ${p.path}: guard on ${crashesOn}/${RUNS} crashes ${JSON.stringify(outcomes(on))}; ` +
          `DEVEXIT_GUARD=0 ${crashesOff}/${RUNS} crashes ${JSON.stringify(outcomes(off))}`,
      );
      for (const r of on) {
        expect(summary(r), tell(r)).toEqual({
          code: p.code,
          signal: null,
          timedOut: false,
          crashed: false,
          closes: { 'hip-host:0/compiler': 1 },
          failed: [],
        });
        expect(r.stdout, tell(r)).toMatch(/polls \d+/);
        expect(hit(r), tell(r)).toBe(false);
      }
      for (const r of off) expect(r.timedOut, tell(r)).toBe(false);
      expect(crashesOff, 'the same fixture without the guard crashes').toBeGreaterThanOrEqual(1);
    });
  }
});
