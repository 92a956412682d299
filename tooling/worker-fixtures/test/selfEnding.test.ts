import { join } from 'node:path';
import { type ChildResult, runChild, runMany, testRuns } from '@devexit/testkit';
import { describe, expect, it } from 'vitest';
import { aborted } from './workerRuns.js';

// Workers that end themselves while something else ends too (fixtures/selfEnding.cjs), with the
// stand-in binding (node-addon-api, C++ exceptions: a call whose environment is torn down under
// it aborts the process).
const script = join(__dirname, '..', 'fixtures', 'selfEnding.cjs');
const RUNS = testRuns(10);
const show = (r: ChildResult) =>
  `code ${r.code} signal ${r.signal} timedOut ${r.timedOut}\n${r.stdout}\n${r.stderr.slice(-1500)}`;
const run = (kind: string, gap: number, mode = 'devexit', runs = RUNS) =>
  runMany(runs, { script, args: [kind, String(gap), mode], timeoutMs: 30_000 });
const lines = (r: ChildResult, re: RegExp) => r.stdout.split('\n').filter((l) => re.test(l));
/** The process ended by itself with 0: no abort, no signal, no hang. */
const expectEndedZero = (r: ChildResult) =>
  expect({ aborted: aborted(r), code: r.code, signal: r.signal, timedOut: r.timedOut }, show(r)).toEqual({
    aborted: false,
    code: 0,
    signal: null,
    timedOut: false,
  });

describe("a Worker's close still running when main exits (stand-in binding)", () => {
  // The Worker ended itself; its exit layer had emptied its registry, and main took it for a
  // Worker with nothing to close: Node tore it down inside the close's native work (SIGABRT 10/10).
  it.each([0, 20, 60])(
    `the Worker's process.exit(0), main's ${'%i'} ms later, during a 200 ms native close: main waits for it, exit 0, the close ends (${RUNS} runs)`,
    async (gap) => {
      for (const r of await run('slow-close', gap)) {
        expectEndedZero(r);
        expect(lines(r, /^close (start|ran) /), show(r)).toEqual(['close start outer', 'close ran outer']);
      }
    },
  );

  // A close that exits ends the Worker inside the run: its words said "closes to run" until
  // main's deadline (3 s), and main reported the close as not run (found by a sweep).
  it(`the same close then calling process.exit(7), main's exit 20 ms later: no wait to the deadline, no "closes not run" (${RUNS} runs)`, async () => {
    for (const r of await run('close-exits', 20)) {
      expectEndedZero(r);
      expect(lines(r, /^close (start|ran) /), show(r)).toEqual(['close start outer']);
      expect(r.stderr, show(r)).not.toContain('closes not run');
    }
  });

  // The outer Worker waited for its inner ones in its exit layer: main skipped it, and its close
  // was lost with no report line (7-8 of 10 runs).
  it.each([0, 10, 60])(
    `nested: the outer Worker's process.exit(0) while its two inner Workers are in calls, main's ${'%i'} ms later: exit 0, all three closes once (${RUNS} runs)`,
    async (gap) => {
      for (const r of await run('nested', gap)) {
        expectEndedZero(r);
        const ran = lines(r, /^close ran /).map((l) => l.replace(/ \d+$/, ''));
        expect(ran.sort(), show(r)).toEqual(['close ran inner', 'close ran inner', 'close ran outer']);
      }
    },
  );

  it(`control: without devexit (the release in the Worker's 'exit' listener) it aborts (${testRuns(5)} runs, every one)`, async () => {
    for (const r of await run('slow-close', 20, 'none', testRuns(5))) {
      expect(aborted(r), show(r)).toBe(true);
    }
  });
});

describe("a Worker's process.exit(5) during main's shutdown() (stand-in binding)", () => {
  // The exit was dropped while the shutdown's stop ran: the Worker never ended (kept alive like a
  // server: hung 10/10) or ended with 0.
  it.each([
    ['where the refusal of its next section is caught (no section open)', 'shutdown-refused'],
    [
      'on a message 100 ms into the shutdown (a section open: put off until the drain ended)',
      'shutdown-message',
    ],
  ])(
    `%s: the Worker ends with 5 after its close ran once, the shutdown resolves, main ends 0 (${RUNS} runs)`,
    async (_, kind) => {
      for (const r of await run(kind, 0)) {
        expectEndedZero(r);
        expect(lines(r, /^(close ran|exit event|shutdown done)/).sort(), show(r)).toEqual([
          'close ran service',
          'exit event 5',
          'shutdown done',
        ]);
      }
    },
  );

  // The Worker's own shutdown() left its word saying "shutdown": the exit asked after it was run as
  // that shutdown again, and the Worker (kept alive by an interval) never ended (hung 10/10).
  it(`its own shutdown(), then process.exit(5) at once with its call in a section: its close runs once, it ends with 5, main ends 0 (${RUNS} runs)`, async () => {
    for (const r of await run('own-shutdown', 0)) {
      expectEndedZero(r);
      expect(lines(r, /^(close ran|exit event|shutdown done)/).sort(), show(r)).toEqual([
        'close ran service',
        'exit event 5',
        'shutdown done',
      ]);
    }
  });

  it(`control: without devexit, the Worker's process.exit(5) with a call in flight aborts (${testRuns(5)} runs, every one)`, async () => {
    for (const r of await run('shutdown-message', 0, 'none', testRuns(5))) {
      expect(aborted(r), show(r)).toBe(true);
    }
  });
});

describe("main's shutdown() with nested Workers (stand-in binding)", () => {
  // The outer Worker, asked to shut down, stopped its inner Worker again: the inner's entry came
  // twice in main's report (12/12), and where the inner had reported before the outer listened the
  // outer waited its whole deadline (3 s) and main said it did not answer (1 of 5).
  it(`main -> outer -> inner, each with a close: one entry each, ok, no wait to the deadline (${RUNS} runs)`, async () => {
    for (const r of await run('nested-shutdown', 0)) {
      expectEndedZero(r);
      expect(lines(r, /^close ran /).sort(), show(r)).toEqual(['close ran inner', 'close ran outer']);
      const report = lines(r, /^report /)[0]
        ?.slice('report '.length)
        .split(' ')
        .sort();
      expect(report, show(r)).toEqual(['inner:ok', 'outer:ok']);
      expect(r.stderr, show(r)).not.toContain('did not answer');
    }
  });
});

describe("a Worker's section still open at the deadline of main's shutdown (stand-in binding, DEVEXIT_TIMEOUT_MS=300)", () => {
  // The Worker's shutdown ran its closes at the deadline under the 5 s native call (60/60, found by
  // a sweep), and ended the process itself: with code 0 where a signal started the shutdown, or by
  // SIGKILL where @devexit/native was loaded in the main thread only.
  const stuck = (kind: string, where: string) =>
    runMany(RUNS, {
      script,
      args: [kind, '0', 'devexit', '-', where],
      env: { DEVEXIT_TIMEOUT_MS: '300', DEVEXIT_SIGNALS: 'SIGTERM' },
      ...(kind === 'stuck-signal' ? { signalOnReady: 'SIGTERM' as const } : {}),
      timeoutMs: 30_000,
    });
  it.each([
    ['shutdown()', 'stuck-shutdown', 'both', { code: 0, signal: null }],
    ['shutdown(), @devexit/native in main only', 'stuck-shutdown', 'main-only', { code: 0, signal: null }],
    ['SIGTERM', 'stuck-signal', 'both', { code: null, signal: 'SIGTERM' }],
    ['SIGTERM, @devexit/native in main only', 'stuck-signal', 'main-only', { code: null, signal: 'SIGTERM' }],
  ])(
    `%s: the process ends at the deadline as the stopper says, the Worker's close does not run under the call (${RUNS} runs)`,
    async (_, kind, where, end) => {
      for (const r of await stuck(kind, where)) {
        expect(
          { aborted: aborted(r), code: r.code, signal: r.signal, timedOut: r.timedOut },
          show(r),
        ).toEqual({
          aborted: false,
          ...end,
          timedOut: false,
        });
        expect(lines(r, /^(close|section ended|shutdown done)/), show(r)).toEqual([]);
        expect(r.stderr, show(r)).toContain("Worker 1 (1 open, the last entered: 'long')");
      }
    },
  );
});

// A Worker that loaded core ended with 0 where Node says 1 or the code set (10/10, found by a
// sweep): core's process.exit in a Worker passed `undefined` on for a call without an argument,
// which Node reads as code 0, and Node ends a Worker's uncaught error with such a call.
describe("a Worker's own exit code, each way it ends itself", () => {
  const codes = join(__dirname, '..', 'fixtures', 'workerCodes.cjs');
  const expected = [
    'throw-sync code 1',
    'throw-timer code 1',
    'rejection code 1',
    'exitCode-exit code 5',
    'exitCode-natural code 6',
    'exit-string code 7',
    'exit-undefined code 0',
  ];
  it(`with core loaded and a close registered in each Worker: the codes Node gives without devexit, each close once (${RUNS} runs)`, async () => {
    const plain = await runChild({ script: codes, args: ['none'], timeoutMs: 30_000 });
    expect(lines(plain, / code /), show(plain)).toEqual(expected);
    for (const r of await runMany(RUNS, { script: codes, args: ['devexit'], timeoutMs: 30_000 })) {
      expectEndedZero(r);
      expect(lines(r, / code /), show(r)).toEqual(expected);
      const closes = lines(r, /^close ran /).map((l) => l.slice('close ran '.length));
      expect(closes, show(r)).toEqual(expected.map((l) => l.split(' ')[0]));
    }
  });
});
