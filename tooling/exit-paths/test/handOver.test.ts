import { join } from 'node:path';
import { type ChildResult, runMany, testRuns } from '@devexit/testkit';
import { describe, expect, it } from 'vitest';

// @devexit/native without @devexit/core (packages/native/src/handOver.ts): the JS exit layer still
// closes the native services before the application's 'exit' listeners and on process.reallyExit,
// with the exit code kept; core, loaded later, takes the bridge; an observer of the exit or a
// Worker loads core. DEVEXIT_REPORT (which the test kit sets) is unset: a DEVEXIT_* setting in the
// environment makes @devexit/native load core at once, the path every other suite here takes.
const script = join(__dirname, '..', 'fixtures', 'handOver.cjs');

const RUNS = testRuns(5);

function parse(r: ChildResult) {
  const lines = r.stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { ...r, lines };
}

/** RUNS children of one case; `check` runs on each (exit races hide in single runs). */
async function each(which: string, check: (r: ReturnType<typeof parse>) => void): Promise<void> {
  const results = await runMany(RUNS, {
    script,
    args: [which],
    timeoutMs: 30_000,
    env: { DEVEXIT_REPORT: undefined },
  });
  for (const r of results) check(parse(r));
}

const closedBy = (layer: string) => [`a@${layer}`, `b@${layer}`];

describe(`@devexit/native loaded without @devexit/core (stand-in runtime; child processes, ${RUNS} runs each)`, () => {
  it.each([
    ['process-exit', 3],
    ['natural-end', 0],
    ['uncaught', 1],
  ])(
    "%s: the native closes run before the application's exit listener, core never loads, exit code %i",
    async (which, code) => {
      await each(which, (r) => {
        expect({ code: r.code, signal: r.signal }, r.stderr).toEqual({ code, signal: null });
        expect(r.lines).toEqual([
          { core: false, bridge: false, closes: closedBy('js-exit'), code, loadedAtStart: false },
        ]);
      });
    },
  );

  it('process.reallyExit (no exit event): closed by the layer on reallyExit, code kept', async () => {
    await each('really-exit', (r) => {
      expect({ code: r.code, signal: r.signal }, r.stderr).toEqual({ code: 4, signal: null });
      expect(r.lines).toEqual([
        { core: false, bridge: false, closes: closedBy('really-exit'), how: 'reallyExit' },
      ]);
    });
  });

  it('core required later takes the bridge, and its exit layer closes them (once)', async () => {
    await each('core-later', (r) => {
      expect({ code: r.code, signal: r.signal }, r.stderr).toEqual({ code: 0, signal: null });
      expect(r.lines).toEqual([
        { core: true, bridge: true, closes: closedBy('js-exit'), code: 0, loadedAtStart: false },
      ]);
    });
  });

  it("an observer of devexit:exit:start: core's layer is loaded at exit and tells it", async () => {
    await each('observer', (r) => {
      expect({ code: r.code, signal: r.signal }, r.stderr).toEqual({ code: 3, signal: null });
      expect(r.lines).toEqual([
        {
          core: true,
          bridge: true,
          closes: closedBy('js-exit'),
          code: 3,
          loadedAtStart: false,
          message: { layer: 'js-exit', code: 3 },
        },
      ]);
    });
  });

  it('an observer, and @devexit/core cannot load at exit (its files removed): the native closes still run, stderr says why', async () => {
    await each('observer-core-gone', (r) => {
      expect({ code: r.code, signal: r.signal }, r.stderr).toEqual({ code: 3, signal: null });
      expect(r.lines).toEqual([
        { core: false, bridge: false, closes: closedBy('js-exit'), code: 3, loadedAtStart: false },
      ]);
      expect(r.stderr).toMatch(
        /devexit: @devexit\/core could not load at exit \(Cannot find module '@devexit\/core' \(removed by the test\)\); the native closes run without it, unobserved\n/,
      );
    });
  });

  it('the settings in force before core loads are the ones core applies when it loads (no DEVEXIT_* set)', async () => {
    await each('defaults', (r) => {
      expect({ code: r.code, signal: r.signal }, r.stderr).toEqual({ code: 0, signal: null });
      const [line] = r.lines as { before: unknown; after: unknown; coreAtStart: boolean }[];
      expect(line?.coreAtStart).toBe(false);
      expect(line?.before).toMatchObject({ timeoutMs: 3000, onTimeout: 'exit', report: 'off' });
      expect(line?.before).toEqual(line?.after);
    });
  });

  it("the main thread's first Worker loads core, which knows that Worker", async () => {
    await each('worker', (r) => {
      expect({ code: r.code, signal: r.signal }, r.stderr).toEqual({ code: 0, signal: null });
      expect(r.lines).toEqual([
        { core: true, bridge: true, closes: [], known: true },
        { core: true, bridge: true, closes: closedBy('js-exit'), code: 0, loadedAtStart: false },
      ]);
    });
  });
});
