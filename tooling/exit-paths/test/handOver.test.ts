import { join } from 'node:path';
import { runChild } from '@devexit/testkit';
import { describe, expect, it } from 'vitest';

// @devexit/native without @devexit/core (packages/native/src/handOver.ts): the JS exit layer still
// closes the native services before the application's 'exit' listeners and on process.reallyExit,
// with the exit code kept; core, loaded later, takes the bridge; an observer of the exit or a
// Worker loads core. DEVEXIT_REPORT (which the test kit sets) is unset: a DEVEXIT_* setting in the
// environment makes @devexit/native load core at once, the path every other suite here takes.
const script = join(__dirname, '..', 'fixtures', 'handOver.cjs');

async function run(which: string) {
  const r = await runChild({ script, args: [which], timeoutMs: 30_000, env: { DEVEXIT_REPORT: undefined } });
  const lines = r.stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { ...r, lines };
}

const closedBy = (layer: string) => [`a@${layer}`, `b@${layer}`];

describe('@devexit/native loaded without @devexit/core (child processes)', () => {
  it.each([
    ['process-exit', 3],
    ['natural-end', 0],
    ['uncaught', 1],
  ])(
    "%s: the native closes run before the application's exit listener, core never loads, exit code %i",
    async (which, code) => {
      const r = await run(which);
      expect({ code: r.code, signal: r.signal }, r.stderr).toEqual({ code, signal: null });
      expect(r.lines).toEqual([
        { core: false, bridge: false, closes: closedBy('js-exit'), code, loadedAtStart: false },
      ]);
    },
  );

  it('process.reallyExit (no exit event): closed by the layer on reallyExit, code kept', async () => {
    const r = await run('really-exit');
    expect({ code: r.code, signal: r.signal }, r.stderr).toEqual({ code: 4, signal: null });
    expect(r.lines).toEqual([
      { core: false, bridge: false, closes: closedBy('really-exit'), how: 'reallyExit' },
    ]);
  });

  it('core required later takes the bridge, and its exit layer closes them (once)', async () => {
    const r = await run('core-later');
    expect({ code: r.code, signal: r.signal }, r.stderr).toEqual({ code: 0, signal: null });
    expect(r.lines).toEqual([
      { core: true, bridge: true, closes: closedBy('js-exit'), code: 0, loadedAtStart: false },
    ]);
  });

  it("an observer of devexit:exit:start: core's layer is loaded at exit and tells it", async () => {
    const r = await run('observer');
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

  it("the main thread's first Worker loads core, which knows that Worker", async () => {
    const r = await run('worker');
    expect({ code: r.code, signal: r.signal }, r.stderr).toEqual({ code: 0, signal: null });
    expect(r.lines).toEqual([
      { core: true, bridge: true, closes: [], known: true },
      { core: true, bridge: true, closes: closedBy('js-exit'), code: 0, loadedAtStart: false },
    ]);
  });
});
