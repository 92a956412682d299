import { join } from 'node:path';
import { type ChildOptions, crashed, outcomes, runMany, summary } from '@devexit/testkit';
import { describe, expect, it } from 'vitest';

const script = join(__dirname, '..', 'fixtures', 'matrix.cjs');
const RUNS = Number(process.env.DEVEXIT_MATRIX_RUNS ?? 20);
const TIMEOUT_MS = 15_000;

interface Row {
  row: string;
  /** Test name, when it differs from the fixture row. */
  name?: string;
  nodeArgs?: string[];
  /** What ends the process with devexit on. */
  expect: { code: number | null; signal: NodeJS.Signals | null };
  /** Closes that must each run exactly once (none for rows that never reach teardown). */
  closes: Record<string, number>;
  /** Layers allowed to have run them. */
  layers: string[];
  reachesTeardown: boolean;
  signalOnReady?: NodeJS.Signals;
  stderrMatch?: RegExp;
}

const both = { 'standin:0/loop': 1, 'standin:1/loop': 1 };
const rows: Row[] = [
  {
    row: 'natural-end',
    expect: { code: 0, signal: null },
    closes: both,
    layers: ['js-exit'],
    reachesTeardown: true,
  },
  {
    row: 'process-exit',
    expect: { code: 0, signal: null },
    closes: both,
    layers: ['js-exit'],
    reachesTeardown: true,
  },
  {
    row: 'uncaught-exception',
    expect: { code: 1, signal: null },
    closes: both,
    layers: ['js-exit'],
    reachesTeardown: true,
    stderrMatch: /boom \(expected by the test\)/,
  },
  {
    row: 'unhandled-rejection',
    expect: { code: 1, signal: null },
    closes: both,
    layers: ['js-exit'],
    reachesTeardown: true,
    stderrMatch: /rejected \(expected by the test\)/,
  },
  {
    row: 'sigint-handler',
    expect: { code: 130, signal: null },
    closes: both,
    layers: ['js-exit'],
    reachesTeardown: true,
    signalOnReady: 'SIGINT',
  },
  {
    row: 'really-exit',
    expect: { code: 0, signal: null },
    closes: both,
    layers: ['tls'],
    reachesTeardown: true,
  },
  {
    row: 'worker-process-exit',
    expect: { code: 0, signal: null },
    closes: both,
    layers: ['js-exit'],
    reachesTeardown: true,
  },
  {
    row: 'worker-first-load',
    expect: { code: 0, signal: null },
    closes: { 'standin:0/loop': 1 },
    layers: ['atexit'],
    reachesTeardown: true,
  },
  {
    // Same as worker-first-load, but `node -r @devexit/native/register` loaded devexit on the
    // main thread first: the guard is armed from .init_array and the JS layer closes.
    row: 'worker-first-load',
    name: 'worker-first-load with the --require preload',
    nodeArgs: ['-r', '@devexit/native/register'],
    expect: { code: 0, signal: null },
    closes: { 'standin:0/loop': 1 },
    layers: ['js-exit'],
    reachesTeardown: true,
  },
  {
    row: 'main-exits-worker-alive',
    expect: { code: 0, signal: null },
    closes: { 'standin:0/loop': 1 },
    layers: ['js-exit'],
    reachesTeardown: true,
  },
  {
    row: 'native-exit-thread',
    expect: { code: 7, signal: null },
    closes: both,
    layers: ['atexit'],
    reachesTeardown: true,
  },
  {
    row: 'sigterm',
    expect: { code: null, signal: 'SIGTERM' },
    closes: {},
    layers: [],
    reachesTeardown: false,
    signalOnReady: 'SIGTERM',
  },
  {
    row: 'sigkill',
    expect: { code: null, signal: 'SIGKILL' },
    closes: {},
    layers: [],
    reachesTeardown: false,
    signalOnReady: 'SIGKILL',
  },
  { row: 'abort', expect: { code: null, signal: 'SIGABRT' }, closes: {}, layers: [], reachesTeardown: false },
];

function options(r: Row, env: Record<string, string> = {}): ChildOptions {
  const o: ChildOptions = { script, args: [r.row], timeoutMs: TIMEOUT_MS, env };
  if (r.signalOnReady) o.signalOnReady = r.signalOnReady;
  if (r.nodeArgs) o.nodeArgs = r.nodeArgs;
  return o;
}

describe('exit-path matrix (crash-reproducing stand-in runtime)', () => {
  for (const r of rows) {
    it(
      r.reachesTeardown
        ? `${r.name ?? r.row}: ${RUNS} runs with devexit exit cleanly, each close exactly once`
        : `${r.name ?? r.row}: ${RUNS} runs end by the signal, no close runs, no crash`,
      async () => {
        const results = await runMany(RUNS, options(r));
        const expected = r.expect.signal ?? undefined;
        for (const res of results) {
          const s = summary(res, expected);
          expect(
            {
              code: s.code,
              signal: s.signal,
              timedOut: s.timedOut,
              crashed: s.crashed,
              closes: s.closes,
              failed: s.failed,
            },
            `stderr:\n${res.stderr}`,
          ).toEqual({ ...r.expect, timedOut: false, crashed: false, closes: r.closes, failed: [] });
          for (const e of res.report) expect(r.layers).toContain(e.layer);
          if (r.stderrMatch) expect(res.stderr).toMatch(r.stderrMatch);
        }
      },
    );

    if (r.reachesTeardown) {
      it(`${r.name ?? r.row}: the same fixture with the guard disabled crashes (control)`, async () => {
        const results = await runMany(RUNS, options(r, { DEVEXIT_GUARD: '0' }));
        const crashes = results.filter((res) => crashed(res)).length;
        // The control proves the test can fail: without devexit the stand-in's teardown kills it.
        expect(crashes, JSON.stringify(outcomes(results))).toBeGreaterThan(0);
        for (const res of results) expect(res.timedOut).toBe(false);
      });
    } else {
      it(`${r.name ?? r.row}: nothing runs and nothing crashes, guard on or off`, async () => {
        const off = await runMany(Math.min(RUNS, 5), options(r, { DEVEXIT_GUARD: '0' }));
        for (const res of off) expect(summary(res, r.expect.signal ?? undefined).crashed).toBe(false);
      });
    }
  }
});
