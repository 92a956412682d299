// The real libcuda (CI: Debian's libcuda1 535, no GPU): probe() and what a service thread calling
// libcuda sees at exit. Its teardown makes later calls return CUDA_ERROR_DEINITIALIZED (4) rather
// than crash; with devexit the thread has stopped before, and never sees 4.
import { join } from 'node:path';
import { type ChildResult, crashed, outcomes, runMany, summary, testRuns } from '@devexit/testkit';
import { describe, expect, it } from 'vitest';
import { cleanUpNvidiactl, fixtures, REAL_ENV, skipped, unavailable, useEnv } from './runtimes.js';

const RUNS = testRuns(20);
const LINGER_RUNS = testRuns(5);
const DEINIT = 'CUDA_ERROR_DEINITIALIZED';
const COMPILER = 'cuda-host:0/compiler';

const PATHS = [
  { path: 'natural', code: 0 },
  { path: 'exit', code: 0 },
  { path: 'uncaught', code: 1 },
  { path: 'sigint', code: 130, signalOnReady: 'SIGINT' as const },
] as const;

async function failure(fn: () => unknown): Promise<Record<string, unknown> | undefined> {
  try {
    await fn();
  } catch (err) {
    return err as Record<string, unknown>;
  }
  return undefined;
}

const child = (
  path: string,
  env: Record<string, string>,
  linger: boolean,
  signalOnReady?: NodeJS.Signals,
) => ({
  script: join(fixtures, 'driverPoll.cjs'),
  args: linger ? [path, 'linger'] : [path],
  env: { ...REAL_ENV, DEVEXIT_CUDA_TRACE: '1', ...env },
  timeoutMs: 30_000,
  ...(signalOnReady ? { signalOnReady } : {}),
});

const tell = (r: ChildResult) =>
  `code=${r.code} signal=${r.signal} timedOut=${r.timedOut}\nstdout: ${r.stdout.slice(-400)}\nstderr: ${r.stderr.slice(-800)}`;

const why = unavailable('libcuda');
useEnv(REAL_ENV);
cleanUpNvidiactl();

describe('cuda: the real libcuda', () => {
  if (why) return skipped(why);

  it('probe() names the driver; without a GPU it says why with CUDA_ERROR_NO_DEVICE, and runs cuInit once (real libcuda)', async () => {
    const { backend } = await import('@devexit/cuda');
    let start = performance.now();
    const p = await backend.probe();
    const first = performance.now() - start;
    start = performance.now();
    const again = await backend.probe();
    const second = performance.now() - start;
    console.log(
      `probe(): first ${first.toFixed(1)} ms (loads libcuda and NVRTC, cuInit), then ${second.toFixed(2)} ms`,
    );
    expect(again).toEqual(p);
    expect(second).toBeLessThan(5);
    expect(p.versions).toMatchObject({ library: 'libcuda.so.1' });
    expect(p.versions?.driver).toMatch(/^\d+\.\d+$/);
    expect(p.versions?.standin).toBeUndefined();
    if (p.available) {
      expect(p.devices).toBeGreaterThanOrEqual(1); // a machine with an NVIDIA GPU
      return;
    }
    expect(p.reason).toBe('no CUDA device: cuInit returned CUDA_ERROR_NO_DEVICE (100)');
    expect(await failure(() => backend.deviceCount())).toMatchObject({ code: 'ERR_DEVEXIT_UNAVAILABLE' });
    const err = await failure(() => backend.open(0));
    expect(err).toMatchObject({ code: 'ERR_DEVEXIT_UNAVAILABLE' });
    expect(String(err?.message)).toContain('CUDA_ERROR_NO_DEVICE');
  });

  for (const p of PATHS) {
    it(`${p.path}: a service thread calling libcuda at exit is closed first and never sees error 4, ${RUNS} runs (real libcuda)`, async () => {
      const signal = 'signalOnReady' in p ? p.signalOnReady : undefined;
      const results = await runMany(RUNS, child(p.path, {}, false, signal));
      const off = await runMany(RUNS, child(p.path, { DEVEXIT_GUARD: '0' }, false, signal));
      const seen = off.filter((r) => r.stderr.includes(DEINIT)).length;
      // Unasserted figure: without devexit the thread sees 4 only when it runs inside libcuda's
      // teardown window; the control below makes that certain.
      console.log(
        `libcuda ${p.path}: devexit ${JSON.stringify(outcomes(results))}, error 4 seen in 0/${RUNS}; ` +
          `DEVEXIT_GUARD=0 ${JSON.stringify(outcomes(off))}, error 4 seen in ${seen}/${RUNS}`,
      );
      for (const r of results) {
        expect(summary(r), tell(r)).toEqual({
          code: p.code,
          signal: null,
          timedOut: false,
          crashed: false,
          closes: { [COMPILER]: 1 },
          failed: [],
        });
        expect(r.stdout, tell(r)).toMatch(/polls \d+ CUDA_ERROR_(NOT_INITIALIZED|\w+)/);
        expect(r.stderr, tell(r)).not.toContain(DEINIT);
      }
      for (const r of off) expect(crashed(r), tell(r)).toBe(false); // libcuda returns 4, it does not crash
    });
  }

  it(`control: an exit held open after libcuda's teardown (an atexit handler registered before cuInit); the thread sees error 4 in every run without devexit, never with it, ${LINGER_RUNS} runs per path (real libcuda)`, async () => {
    for (const p of PATHS) {
      const signal = 'signalOnReady' in p ? p.signalOnReady : undefined;
      const on = await runMany(LINGER_RUNS, child(p.path, {}, true, signal));
      const off = await runMany(LINGER_RUNS, child(p.path, { DEVEXIT_GUARD: '0' }, true, signal));
      const seenOff = off.filter((r) => r.stderr.includes(DEINIT)).length;
      console.log(
        `libcuda control ${p.path}: error 4 seen with devexit 0/${LINGER_RUNS}, with DEVEXIT_GUARD=0 ${seenOff}/${LINGER_RUNS}`,
      );
      for (const r of on) {
        expect(summary(r).closes, tell(r)).toEqual({ [COMPILER]: 1 });
        expect(r.stderr, tell(r)).not.toContain(DEINIT);
      }
      for (const r of off) {
        expect(r.code, tell(r)).toBe(p.code);
        expect(r.stderr, tell(r)).toContain(
          `devexit-cuda: ${COMPILER}: cuDeviceGetCount returned ${DEINIT} (4)`,
        );
      }
    }
  });
});
