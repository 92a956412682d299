// THE real NVRTC exit race (CI: Debian's libnvrtc11.2): NVRTC registers its exit handlers as it
// loads and at its first compile; one of them unloads libnvrtc-builtins. A compile still running
// on a service thread when they run crashes the process. devexit closes the compiler service
// first, on every exit path.
import { join } from 'node:path';
import { type ChildResult, crashed, outcomes, runMany, summary } from '@devexit/testkit';
import { describe, expect, it } from 'vitest';
import { fixtures, NO_DRIVER_ENV, skipped, unavailable } from './runtimes.js';

const RUNS = 30;
const CONTROL_RUNS = 10;
const COMPILER = 'cuda-host:0/compiler';

const PATHS = [
  { path: 'natural', code: 0 },
  { path: 'exit', code: 0 },
  { path: 'uncaught', code: 1 },
  { path: 'sigint', code: 130, signalOnReady: 'SIGINT' as const },
] as const;

// No libcuda in these children: the compiler service needs none.
const child = (path: string, guard: boolean, signalOnReady?: NodeJS.Signals) => ({
  script: join(fixtures, 'nvrtcRace.cjs'),
  args: [path],
  env: { ...NO_DRIVER_ENV, ...(guard ? {} : { DEVEXIT_GUARD: '0' }) },
  timeoutMs: 30_000,
  ...(signalOnReady ? { signalOnReady } : {}),
});

const tell = (r: ChildResult) =>
  `code=${r.code} signal=${r.signal} timedOut=${r.timedOut}\nstdout: ${r.stdout.slice(-300)}\nstderr: ${r.stderr.slice(-800)}`;

const why = unavailable('nvrtc');

describe(`cuda: the NVRTC exit race, compiles in flight at exit (real libnvrtc, ${RUNS} runs per path)`, () => {
  if (why) return skipped(why);

  for (const p of PATHS) {
    it(`${p.path}: with devexit, exit ${p.code}, 0 crashes, the compiler closed once; with DEVEXIT_GUARD=0, at least one crash (real NVRTC)`, async () => {
      const signal = 'signalOnReady' in p ? p.signalOnReady : undefined;
      const on = await runMany(RUNS, child(p.path, true, signal));
      const off = await runMany(RUNS, child(p.path, false, signal));
      // The race window is NVRTC's teardown, a millisecond or so: on a loaded machine the compile
      // thread is often not running inside it. A first 30 without a crash gets 30 more.
      if (!off.some((r) => crashed(r))) off.push(...(await runMany(RUNS, child(p.path, false, signal))));
      const crashesOn = on.filter((r) => crashed(r)).length;
      const crashesOff = off.filter((r) => crashed(r)).length;
      console.log(
        `NVRTC exit race ${p.path}: devexit ${crashesOn}/${on.length} crashes ${JSON.stringify(outcomes(on))}; ` +
          `DEVEXIT_GUARD=0 ${crashesOff}/${off.length} crashes ${JSON.stringify(outcomes(off))}`,
      );
      for (const r of on) {
        expect(summary(r), tell(r)).toEqual({
          code: p.code,
          signal: null,
          timedOut: false,
          crashed: false,
          closes: { [COMPILER]: 1 },
          failed: [],
        });
        expect(r.stdout, tell(r)).toMatch(/compiling \d+/);
      }
      for (const r of off) expect(r.timedOut, tell(r)).toBe(false);
      expect(crashesOff, 'the same child without devexit crashes').toBeGreaterThanOrEqual(1);
    });
  }

  it(`control: an atexit handler registered before NVRTC loads stops its compile thread too late and crashes, ${CONTROL_RUNS}/${CONTROL_RUNS}; devexit's close ran first (real NVRTC)`, async () => {
    const results = await runMany(CONTROL_RUNS, {
      script: join(fixtures, 'nvrtcControl.cjs'),
      env: NO_DRIVER_ENV,
      timeoutMs: 30_000,
    });
    console.log(
      `NVRTC control: ${results.filter((r) => crashed(r)).length}/${CONTROL_RUNS} crashes ${JSON.stringify(outcomes(results))}`,
    );
    for (const r of results) {
      expect(r.stdout, tell(r)).toContain('nvrtc loaded before arm: false');
      expect(r.stdout, tell(r)).toMatch(/compiling control=\d+ devexit=\d+/);
      expect(crashed(r), tell(r)).toBe(true);
      // The fixture's handler never got to report that it joined its thread.
      expect(r.stderr, tell(r)).not.toContain('control: joined');
      expect(
        r.report.map((e) => `${e.device.type}:${e.device.index}/${e.service} ${e.layer} ${e.outcome}`),
        tell(r),
      ).toEqual([`${COMPILER} js-exit ok`]);
    }
  });
});
