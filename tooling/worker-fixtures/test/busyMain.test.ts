import { join } from 'node:path';
import { type ChildResult, runMany, testRuns } from '@devexit/testkit';
import { describe, expect, it } from 'vitest';
import { aborted, closesRan } from './workerRuns.js';

// A main thread that creates Workers and keeps its event loop busy until it exits, in that same
// turn (fixtures/busyMain.cjs), with the stand-in binding (node-addon-api, C++ exceptions) in the
// Workers: Node's 'worker' event, which tells a realm of a Worker it created, comes on the next
// tick, which this main never reaches.
const script = join(__dirname, '..', 'fixtures', 'busyMain.cjs');
const RUNS = testRuns(10);
const show = (r: ChildResult) =>
  `code ${r.code} signal ${r.signal} timedOut ${r.timedOut}\n${r.stdout}\n${r.stderr.slice(-1500)}`;

const run = (order: string, mode: string, ending: string, runs = RUNS) =>
  runMany(runs, { script, args: [order, mode, ending], timeoutMs: 60_000 });

describe('a main thread busy from creating its Workers until it exits (stand-in binding)', () => {
  it.each([
    ['worker_threads loaded before @devexit/core', 'exit', 0, 2, 'threads-first'],
    ['worker_threads loaded before @devexit/core', 'throw', 1, 2, 'threads-first'],
    ['main already listening (a Worker made a turn earlier)', 'exit', 0, 3, 'listening'],
    ['main already listening (a Worker made a turn earlier)', 'throw', 1, 3, 'listening'],
  ])(
    `%s, main then ends by %s: no abort, exit %i, each of the %i Workers' closes once (${RUNS} runs)`,
    async (_, ending, code, workers, order) => {
      for (const r of await run(order, 'devexit', ending)) {
        expect({ aborted: aborted(r), code: r.code, signal: r.signal }, show(r)).toEqual({
          aborted: false,
          code,
          signal: null,
        });
        const closes = Object.values(closesRan(r));
        expect(closes, show(r)).toEqual(Array(workers).fill(1));
      }
    },
  );

  it(`control: the same program without devexit aborts (${testRuns(5)} runs, every one)`, async () => {
    for (const r of await run('threads-first', 'none', 'exit', testRuns(5))) {
      expect(aborted(r), show(r)).toBe(true);
    }
  });

  it(`not covered (core README, "What devexit cannot protect"): @devexit/core loaded before worker_threads: it aborts (${testRuns(3)} runs, at least one)`, async () => {
    const results = await run('core-first', 'devexit', 'exit', testRuns(3));
    expect(results.some(aborted), results.map(show).join('\n---\n')).toBe(true);
  });
});

describe("a Worker's own process.exit(7) with a section open, then terminate() from main (stand-in binding)", () => {
  it(`the Worker ends with 7 after its close, and terminate() resolves with 7 (${RUNS} runs)`, async () => {
    const results = await runMany(RUNS, {
      script: join(__dirname, '..', 'fixtures', 'exitThenTerminate.cjs'),
      timeoutMs: 60_000,
    });
    for (const r of results) {
      expect({ code: r.code, signal: r.signal, aborted: aborted(r) }, show(r)).toEqual({
        code: 0,
        signal: null,
        aborted: false,
      });
      const out = r.stdout.split('\n').filter(Boolean);
      expect(out.filter((l) => l !== 'close ran').sort(), show(r)).toEqual(['exit event 7', 'terminate 7']);
      expect(
        out.filter((l) => l === 'close ran'),
        show(r),
      ).toHaveLength(1);
    }
  });
});
