import { type ChildResult, ending } from '@devexit/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ABORT_TEXT,
  aborted,
  closesRan,
  RUNS,
  runFixture,
  tally,
  workerIds,
  writeModel,
} from './workerRuns.js';

// The opt-in for a plain worker.terminate(), and a native call that does not return in time,
// with the stand-in binding (node-addon-api, C++ exceptions) in 2 Workers.
let model: ReturnType<typeof writeModel>;
beforeAll(() => {
  model = writeModel();
});
afterAll(() => model?.remove());

const show = (r: ChildResult) =>
  `code ${r.code} signal ${r.signal} timedOut ${r.timedOut}\n${r.stdout}\n${r.stderr.slice(-1500)}`;

describe("configure({ workers: 'guard' }): a plain worker.terminate() goes through terminate()", () => {
  it.each(['standin-sync', 'standin-async', 'onnx'] as const)(
    `%s: no abort, each close once, main exits 0 (${RUNS} runs)`,
    async (binding) => {
      const results = await runFixture(binding, 'terminate', 'guard', model.file);
      console.log(`guard ${binding}: ${tally(results)}`);
      for (const r of results) {
        expect({ code: r.code, signal: r.signal, aborted: aborted(r) }, show(r)).toEqual({
          code: 0,
          signal: null,
          aborted: false,
        });
        expect(closesRan(r), show(r)).toEqual(Object.fromEntries(workerIds(r).map((id) => [id, 1])));
        expect(r.stdout, show(r)).toMatch(/^terminated 1 1$/m);
      }
    },
    RUNS * 20_000,
  );
});

describe('a Worker blocked in a native call past the deadline (a 60 s call, DEVEXIT_TIMEOUT_MS=500)', () => {
  const stuck = (env: Record<string, string>, runs: number, timeoutMs = 20_000) =>
    runFixture('standin-sync', 'exit', 'devexit', model.file, runs, {
      args: ['--ms', '60000', '--stuck', '--native'],
      env: { DEVEXIT_TIMEOUT_MS: '500', DEVEXIT_REPORT: 'json', ...env },
      timeoutMs,
    });

  it('with @devexit/native in main: the process ends at the deadline with its code (0), no abort, the report names the section (5 runs)', async () => {
    const results = await stuck({}, Math.min(RUNS, 5));
    for (const r of results) {
      expect(ending(r), show(r)).toEqual({
        code: 0,
        signal: null,
        timedOut: false,
      });
      expect(ABORT_TEXT.test(r.stderr), show(r)).toBe(false);
      expect(r.ms, show(r)).toBeLessThan(10_000);
      const sections = r.report.filter((e) => e.device.type === 'thread');
      expect(sections.length, show(r)).toBe(2);
      for (const e of sections)
        expect(e, show(r)).toMatchObject({ service: 'critical:standin-sync', outcome: 'timeout' });
      // The Workers' closes did not run under their calls.
      expect(closesRan(r), show(r)).toEqual({});
    }
  });

  it("control: onTimeout 'warn' lets Node tear the Workers down: it joins a thread inside a 60 s call (a hang; killed at 5 s)", async () => {
    const results = await stuck({ DEVEXIT_ON_TIMEOUT: 'warn' }, 1, 5000);
    const r = results[0] as ChildResult;
    expect(r.timedOut, show(r)).toBe(true);
    // What the hung child was doing, read before the kill (testkit's describeHang): its threads,
    // the main one first; with DEVEXIT_TEST_HANG_STACKS=1 (CI) every thread's backtrace too.
    expect(r.stderr, show(r)).toMatch(
      /devexit-test: the child \(pid \d+\) hung; its threads[^\n]*\n {2}\d+ node [A-Z] /,
    );
    if (process.env.DEVEXIT_TEST_HANG_STACKS === '1')
      expect(r.stderr, show(r)).toMatch(/^Thread \d+ .*\n#0 /m);
  });
});
