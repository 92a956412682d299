// NVRTC 11 swaps in SIGINT/SIGTERM handlers of its own during its first compile and puts Node's
// back with signal(), which drops SA_RESETHAND: Node's handler then re-raises the signal into
// itself forever and the process no longer ends by it. The compiler service restores the flags
// (addon/nvrtc_api.cc). Real NVRTC, no libcuda.
import { join } from 'node:path';
import { type ChildResult, ending, runMany, testRuns } from '@devexit/testkit';
import { describe, expect, it } from 'vitest';
import { fixtures, NO_DRIVER_ENV, skipped, unavailable } from './runtimes.js';

const why = unavailable('nvrtc');
const tell = (r: ChildResult) =>
  `code=${r.code} signal=${r.signal} timedOut=${r.timedOut}\nstdout: ${r.stdout.slice(-300)}\nstderr: ${r.stderr.slice(-800)}`;
const child = (mode: string, signal: NodeJS.Signals, timeoutMs: number) => ({
  script: join(fixtures, 'signalAfterCompile.cjs'),
  args: [mode],
  env: NO_DRIVER_ENV,
  signalOnReady: signal,
  timeoutMs,
});

describe('cuda: SIGTERM and SIGINT still end a process that compiled with NVRTC (real libnvrtc)', () => {
  if (why) return skipped(why);

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`${signal} with no listener ends the process by ${signal} after a compile (10 runs)`, async () => {
      const results = await runMany(testRuns(10), child('devexit', signal, 20_000));
      for (const r of results) {
        expect(ending(r), tell(r)).toEqual({
          code: null,
          signal,
          timedOut: false,
        });
      }
    });
  }

  it('control: after a raw NVRTC compile (no devexit around it) SIGTERM no longer ends the process (5 runs, killed after 4 s)', async () => {
    const results = await runMany(testRuns(5), child('raw', 'SIGTERM', 4_000));
    for (const r of results) expect(r.stdout, tell(r)).toContain('ready');
    const survived = results.filter((r) => r.timedOut).length;
    console.log(`raw NVRTC: ${survived}/5 survived SIGTERM`);
    expect(survived, 'the test above can fail: the flags do get lost').toBeGreaterThanOrEqual(1);
  });
});
