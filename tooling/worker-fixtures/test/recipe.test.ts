import type { ChildResult } from '@devexit/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ABORT_TEXT,
  BINDINGS,
  closesRan,
  ENDINGS,
  type Ending,
  ROW_TIMEOUT_MS,
  RUNS,
  runFixture,
  tally,
  terminated,
  workerErrors,
  workerExitCodes,
  workerIds,
  writeModel,
} from './workerRuns.js';

// The documented recipe of issue 16 (fixtures/worker.cjs, --mode devexit): each native call in
// critical(), the binding's release registered with closeAtExit in the Worker, devexit loaded in
// main before the Workers, terminate(worker) instead of worker.terminate(). The same fixture
// without it aborts on every ending (controls.test.ts); with it: no abort, the ending's own exit
// code, and each Worker's close ran exactly once.

/** The exit code main must end with. */
const CODE: Record<Ending, number> = { exit: 0, throw: 1, sigterm: 0, terminate: 0 };

let model: ReturnType<typeof writeModel>;
beforeAll(() => {
  model = writeModel();
});
afterAll(() => model?.remove());

function seen(r: ChildResult, ending: Ending) {
  const ids = workerIds(r);
  const exits = workerExitCodes(r);
  return {
    workers: ids.length,
    timedOut: r.timedOut,
    errors: workerErrors(r),
    code: r.code,
    signal: r.signal,
    abortText: ABORT_TEXT.test(r.stderr),
    // A close that returned a promise (ort's release() is async) is reported as failed.
    failedCloses: r.stderr.split('\n').filter((l) => /devexit: close of .* failed/.test(l)),
    closes: closesRan(r),
    // terminate() resolved with each Worker's exit code (its 'exit' event's).
    terminated: ending === 'terminate' ? terminated(r) : undefined,
    exitCodes: ending === 'terminate' ? ids.map((id) => exits[id]) : undefined,
    thrown: ending === 'throw' ? /boom \(expected by the test\)/.test(r.stderr) : undefined,
  };
}

function expected(r: ChildResult, ending: Ending) {
  const ids = workerIds(r);
  const exits = workerExitCodes(r);
  return {
    workers: 2,
    timedOut: false,
    errors: [],
    code: CODE[ending],
    signal: null,
    abortText: false,
    failedCloses: [],
    closes: Object.fromEntries(ids.map((id) => [id, 1])),
    terminated: ending === 'terminate' ? ids.map((id) => exits[id]) : undefined,
    exitCodes: ending === 'terminate' ? ids.map(() => expect.any(Number) as number) : undefined,
    thrown: ending === 'throw' ? true : undefined,
  };
}

describe.each(BINDINGS)('devexit recipe: $name in 2 Workers', ({ binding }) => {
  it.each(ENDINGS)(
    `no abort on $name, each close once (${RUNS} runs)`,
    async ({ ending }) => {
      const results = await runFixture(binding, ending, 'devexit', model.file);
      console.log(`recipe ${binding} ${ending}: ${tally(results)}`);
      expect(results.map((r) => seen(r, ending))).toEqual(results.map((r) => expected(r, ending)));
    },
    ROW_TIMEOUT_MS,
  );
});

// The code that awaited a section may call the binding again at once, outside any section, to
// read the result (as @devexit/wgpu reads a mapped buffer: getMappedRange() after mapAsync()). A
// stop asked during the section moves on only after that code ran, never during its call: told
// from a microtask queued as the section ended, 20/20 runs aborted on exit and on terminate.
describe('devexit recipe: stand-in binding, a sync call right after each awaited one (--then-sync 30)', () => {
  it.each(ENDINGS)(
    `no abort on $name, each close once (${RUNS} runs)`,
    async ({ ending }) => {
      const results = await runFixture('standin-async', ending, 'devexit', model.file, RUNS, {
        args: ['--ms', '100', '--then-sync', '30'],
      });
      console.log(`recipe then-sync ${ending}: ${tally(results)}`);
      expect(results.map((r) => seen(r, ending))).toEqual(results.map((r) => expected(r, ending)));
    },
    ROW_TIMEOUT_MS,
  );
});
