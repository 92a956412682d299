import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ABORT_TEXT,
  BINDINGS,
  ENDINGS,
  ROW_TIMEOUT_MS,
  RUNS,
  runFixture,
  tally,
  workerErrors,
  workerIds,
  writeModel,
} from './workerRuns.js';

// The controls of issue 16: WITHOUT devexit, a third-party binding in Workers aborts the whole
// process (SIGABRT) when the Workers are ended mid-call, on every ending. recipe.test.ts runs the
// same fixture with the documented recipe and must see no abort.

let model: ReturnType<typeof writeModel>;
beforeAll(() => {
  model = writeModel();
});
afterAll(() => model?.remove());

describe.each(BINDINGS)('control, no devexit: $name in 2 Workers', ({ binding }) => {
  it.each(ENDINGS)(
    `aborts on $name (${RUNS} runs)`,
    async ({ ending }) => {
      const results = await runFixture(binding, ending, 'none', model.file);
      console.log(`control ${binding} ${ending}: ${tally(results)}`);
      const seen = results.map((r) => ({
        // Ended only once both Workers were inside a call: the abort is the ending's, not start-up's.
        workers: workerIds(r).length,
        timedOut: r.timedOut,
        errors: workerErrors(r),
        signal: r.signal,
      }));
      const abort = { workers: 2, timedOut: false, errors: [], signal: 'SIGABRT' };
      expect(seen).toEqual(results.map(() => abort));
      // What aborts is the binding's error escaping (libstdc++'s line): seen in the row's runs. Not
      // in each one: two Workers aborting at once can end the process before either line is out
      // (a CI run saw one SIGABRT of three with no line at all).
      expect(results.some((r) => ABORT_TEXT.test(r.stderr))).toBe(true);
    },
    ROW_TIMEOUT_MS,
  );
});
