import { copyFileSync, existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import {
  type ChildOptions,
  type ChildResult,
  crashed,
  exitLatency,
  outcomes,
  runMany,
  summary,
  testRuns,
} from '@devexit/testkit';
import { describe, expect, it } from 'vitest';

/**
 * The exit-path matrix, shared by the two builds of @devexit/native it runs against: the Linux/glibc
 * build (every layer) and the DEVEXIT_PORTABLE build (the glibc-only layers compiled out: what
 * musl, macOS and Windows get). Each row: RUNS child processes, exit code or signal, which closes
 * ran (each exactly once) and in which layer; each row that reaches teardown is also run with the
 * guard off, where the crash-reproducing stand-in runtime must crash it (the row can fail).
 */

const fixtures = join(__dirname, '..', 'fixtures');
export const RUNS = testRuns(Number(process.env.DEVEXIT_MATRIX_RUNS ?? 20));
const TIMEOUT_MS = 15_000;

export type Build = 'glibc' | 'portable';

/** The registry addons the rows run against. */
export const addons: Record<Build, string> = {
  glibc: join(
    dirname(require.resolve('@devexit/native/package.json')),
    'build',
    'Release',
    'devexit_native.node',
  ),
  portable: join(__dirname, '..', 'portable', 'build', 'Release', 'devexit_native.node'),
};

interface Expectation {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Closes that must each run exactly once (none for rows that never reach teardown). */
  closes: Record<string, number>;
  /** Layers allowed to have run them. */
  layers: string[];
  /** Closes reported as not ok, as `service: outcome error` (regular expressions). */
  failed?: RegExp[];
  /** ms from the fixture starting the exit to the child's end. */
  maxExitMs?: number;
  stderr?: RegExp[];
  notStderr?: RegExp[];
}

export interface Row {
  row: string;
  /** Test name, when it differs from the fixture row. */
  name?: string;
  fixture?: 'matrix.cjs' | 'engine.cjs';
  nodeArgs?: string[];
  env?: Record<string, string>;
  /** A second copy of the registry addon, passed as argv[3]. */
  secondCopy?: boolean;
  reachesTeardown: boolean;
  signalOnReady?: NodeJS.Signals;
  expect: Expectation;
  /** What differs in the portable build. */
  portable?: Partial<Expectation>;
}

const both = { 'standin:0/loop': 1, 'standin:1/loop': 1 };
const fast = { DEVEXIT_TIMEOUT_MS: '500' };
const deadlineWarning = (what: string, code: number) =>
  new RegExp(
    `closing services took longer than 500 ms \\(DEVEXIT_TIMEOUT_MS=500\\); still running: ${what}.*; skipping library teardown: exiting with code ${code} \\(onTimeout 'exit', the default\\)`,
  );
const notStarted = /^loop: timeout not started before the deadline$/;
const stuckAtDeadline = /^stuck: timeout a JS close still running at the deadline$/;
/** engine.cjs stuck-js-close-between: three JS closes on one device, the middle one stuck. */
const between = { ...both, 'jsdev:0/before': 1, 'jsdev:0/stuck': 1, 'jsdev:0/after': 1 };
const notStartedNames = 'not started: jsdev:0\\/after, standin:[01]\\/loop, standin:[01]\\/loop';
const jsOrder = (names: string[]) => new RegExp(names.map((n) => `js close ${n}\\n`).join('(.|\\n)*'));

export const rows: Row[] = [
  {
    row: 'natural-end',
    reachesTeardown: true,
    expect: { code: 0, signal: null, closes: both, layers: ['js-exit'] },
  },
  {
    row: 'process-exit',
    reachesTeardown: true,
    expect: { code: 0, signal: null, closes: both, layers: ['js-exit'] },
  },
  {
    row: 'uncaught-exception',
    reachesTeardown: true,
    expect: {
      code: 1,
      signal: null,
      closes: both,
      layers: ['js-exit'],
      stderr: [/boom \(expected by the test\)/],
    },
  },
  {
    row: 'unhandled-rejection',
    reachesTeardown: true,
    expect: {
      code: 1,
      signal: null,
      closes: both,
      layers: ['js-exit'],
      stderr: [/rejected \(expected by the test\)/],
    },
  },
  {
    row: 'sigint-handler',
    reachesTeardown: true,
    signalOnReady: 'SIGINT',
    expect: { code: 130, signal: null, closes: both, layers: ['js-exit'] },
  },
  {
    // process.reallyExit skips the 'exit' event: devexit's hook on it runs the JS layer.
    row: 'really-exit',
    reachesTeardown: true,
    expect: { code: 0, signal: null, closes: both, layers: ['really-exit'] },
  },
  {
    row: 'worker-process-exit',
    reachesTeardown: true,
    expect: { code: 0, signal: null, closes: both, layers: ['js-exit'] },
  },
  {
    row: 'worker-first-load',
    reachesTeardown: true,
    expect: {
      code: 0,
      signal: null,
      closes: { 'standin:0/loop': 1 },
      layers: ['atexit'],
      stderr: [/the main-thread guard is not armed: @devexit\/native was first loaded in a Worker/],
    },
    portable: { stderr: [] },
  },
  {
    // `node -r @devexit/native/register` loaded devexit on the main thread first: the JS layer closes.
    row: 'worker-first-load',
    name: 'worker-first-load with the --require preload',
    nodeArgs: ['-r', '@devexit/native/register'],
    reachesTeardown: true,
    expect: {
      code: 0,
      signal: null,
      closes: { 'standin:0/loop': 1 },
      layers: ['js-exit'],
      notStderr: [/not armed/],
    },
  },
  {
    row: 'main-exits-worker-alive',
    reachesTeardown: true,
    expect: { code: 0, signal: null, closes: { 'standin:0/loop': 1 }, layers: ['js-exit'] },
  },
  {
    row: 'native-exit-thread',
    reachesTeardown: true,
    expect: { code: 7, signal: null, closes: both, layers: ['atexit'] },
  },
  {
    // Native exit() on the main thread: no 'exit' event, no JS.
    row: 'native-exit-main',
    fixture: 'engine.cjs',
    reachesTeardown: true,
    expect: { code: 9, signal: null, closes: both, layers: ['tls'] },
    portable: { layers: ['atexit'] },
  },
  {
    row: 'stuck-js-close',
    name: 'a JS close stuck for 5 s, deadline 500 ms, process.exit(3)',
    fixture: 'engine.cjs',
    env: fast,
    reachesTeardown: true,
    expect: {
      code: 3,
      signal: null,
      closes: { ...both, 'jsdev:0/stuck': 1 },
      layers: ['js-exit'],
      failed: [/^stuck: timeout a JS close still running at the deadline$/, notStarted, notStarted],
      maxExitMs: 2000,
      stderr: [/js close stuck/, deadlineWarning('jsdev:0\\/stuck \\(a JS close\\)', 3)],
    },
  },
  {
    row: 'stuck-js-close-between',
    name: 'a JS close stuck between two others, deadline 500 ms, process.exit(3): each close not started has its line',
    fixture: 'engine.cjs',
    env: fast,
    reachesTeardown: true,
    expect: {
      code: 3,
      signal: null,
      closes: between,
      layers: ['js-exit'],
      failed: [stuckAtDeadline, /^after: timeout not started before the deadline$/, notStarted, notStarted],
      maxExitMs: 2000,
      stderr: [
        jsOrder(['before', 'stuck']),
        deadlineWarning(`jsdev:0\\/stuck \\(a JS close\\); ${notStartedNames}`, 3),
      ],
      notStderr: [/js close after/],
    },
  },
  {
    row: 'stuck-js-close-between',
    name: "the same with onTimeout 'warn', stuck 1 s: the closes after it run late, one warning",
    fixture: 'engine.cjs',
    env: { ...fast, DEVEXIT_ON_TIMEOUT: 'warn', STUCK_MS: '1000' },
    reachesTeardown: true,
    expect: {
      code: 3,
      signal: null,
      closes: between,
      layers: ['js-exit'],
      failed: [stuckAtDeadline, /^after: timeout finished after the deadline$/],
      stderr: [
        jsOrder(['before', 'stuck', 'after']),
        new RegExp(
          `^(?![\\s\\S]*closing services took longer[\\s\\S]*closing services took longer)[\\s\\S]*closing services took longer than 500 ms \\(DEVEXIT_TIMEOUT_MS=500\\); still running: jsdev:0\\/stuck \\(a JS close\\); ${notStartedNames}; continuing \\(onTimeout 'warn' from DEVEXIT_ON_TIMEOUT=warn\\)`,
        ),
      ],
    },
  },
  {
    row: 'endless-js-close',
    name: 'an endless JS close, deadline 500 ms, process.exit(3)',
    fixture: 'engine.cjs',
    env: fast,
    reachesTeardown: true,
    expect: {
      code: 3,
      signal: null,
      closes: { ...both, 'jsdev:0/endless': 1 },
      layers: ['js-exit'],
      failed: [/^endless: timeout a JS close still running at the deadline$/, notStarted, notStarted],
      maxExitMs: 2000,
      stderr: [/js close endless/, deadlineWarning('jsdev:0\\/endless \\(a JS close\\)', 3)],
    },
  },
  {
    // The nested exit's code wins (as in Node and libc); the other device still closes; no stall.
    row: 'native-close-exits',
    name: 'a native close calls exit(7) during process.exit(3)',
    fixture: 'engine.cjs',
    reachesTeardown: true,
    expect: {
      code: 7,
      signal: null,
      closes: both,
      layers: ['js-exit'],
      failed: [/^loop: error the close called exit\((7)?\)$/],
      maxExitMs: 1500,
      notStderr: [/took longer than/],
    },
    // Exit handlers there cannot see the nested status: the first exit's code is kept.
    portable: { code: 3 },
  },
  {
    row: 'js-close-exits',
    name: 'a JS close calls process.exit(5) during process.exit(3): the closes after it run',
    fixture: 'engine.cjs',
    reachesTeardown: true,
    expect: {
      code: 5,
      signal: null,
      closes: { ...both, 'jsdev:0/a': 1, 'jsdev:0/b': 1, 'jsdev:0/c': 1 },
      layers: ['js-exit'],
      failed: [/^a: error the close exited \(process\.reallyExit\(5\)\)$/],
      stderr: [jsOrder(['a', 'b', 'c'])],
    },
  },
  {
    row: 'really-exit-js-close',
    name: 'process.reallyExit(4) with a JS close',
    fixture: 'engine.cjs',
    reachesTeardown: true,
    expect: { code: 4, signal: null, closes: { ...both, 'jsdev:0/a': 1 }, layers: ['really-exit'] },
  },
  {
    row: 'listener-exits',
    name: "an application 'exit' listener added before devexit calls process.exit(3)",
    fixture: 'engine.cjs',
    reachesTeardown: true,
    expect: {
      code: 3,
      signal: null,
      closes: { ...both, 'jsdev:0/a': 1 },
      layers: ['js-exit'],
      stderr: [/js close a\n(.|\n)*app listener/],
    },
  },
  {
    row: 'listener-throws',
    name: "an application 'exit' listener added before devexit throws",
    fixture: 'engine.cjs',
    reachesTeardown: true,
    expect: {
      code: 2,
      signal: null,
      closes: { ...both, 'jsdev:0/a': 1 },
      layers: ['js-exit'],
      stderr: [/js close a\n(.|\n)*app listener/, /listener throws \(expected by the test\)/],
    },
  },
  {
    row: 'promise-close',
    name: 'a close that returns a rejected promise: an error, no fatal stack, exit code kept',
    fixture: 'engine.cjs',
    reachesTeardown: true,
    expect: {
      code: 6,
      signal: null,
      closes: { ...both, 'jsdev:0/async': 1 },
      layers: ['js-exit'],
      failed: [/^async: error the close returned a promise: closes run synchronously at exit/],
      notStderr: [/rejected close \(expected by the test\)/],
    },
  },
  {
    row: 'two-copies-slow-close',
    name: 'two copies (a Worker loaded the owner first) and a slow close: the deadline ends the exit',
    fixture: 'engine.cjs',
    secondCopy: true,
    env: fast,
    reachesTeardown: true,
    expect: {
      code: 3,
      signal: null,
      closes: both,
      layers: ['js-exit'],
      failed: [/^loop: timeout still running at the deadline$/],
      maxExitMs: 2000,
      stderr: [deadlineWarning('standin:0\\/loop', 3)],
    },
  },
  {
    row: 'sigterm',
    reachesTeardown: false,
    signalOnReady: 'SIGTERM',
    expect: { code: null, signal: 'SIGTERM', closes: {}, layers: [] },
  },
  {
    row: 'sigkill',
    reachesTeardown: false,
    signalOnReady: 'SIGKILL',
    expect: { code: null, signal: 'SIGKILL', closes: {}, layers: [] },
  },
  { row: 'abort', reachesTeardown: false, expect: { code: null, signal: 'SIGABRT', closes: {}, layers: [] } },
];

function options(build: Build, r: Row, env: Record<string, string> = {}): ChildOptions {
  const args = [r.row];
  if (r.secondCopy) {
    const copy = join(mkdtempSync(join(tmpdir(), 'devexit-copy-')), 'devexit_native.node');
    copyFileSync(addons[build], copy);
    args.push(copy);
  }
  const o: ChildOptions = {
    script: join(fixtures, r.fixture ?? 'matrix.cjs'),
    args,
    timeoutMs: TIMEOUT_MS,
    env: { ...r.env, ...env, ...(build === 'portable' ? { DEVEXIT_NATIVE_PATH: addons.portable } : {}) },
  };
  if (r.signalOnReady) o.signalOnReady = r.signalOnReady;
  if (r.nodeArgs) o.nodeArgs = r.nodeArgs;
  return o;
}

function check(res: ChildResult, e: Expectation): void {
  const s = summary(res, e.signal ?? undefined);
  const failed = e.failed ?? [];
  expect(
    {
      code: s.code,
      signal: s.signal,
      timedOut: s.timedOut,
      crashed: s.crashed,
      closes: s.closes,
      failed: s.failed.length,
      layers: [...new Set(res.report.map((r) => r.layer))].filter((l) => !e.layers.includes(l)),
    },
    `stderr:\n${res.stderr}`,
  ).toEqual({
    code: e.code,
    signal: e.signal,
    timedOut: false,
    crashed: false,
    closes: e.closes,
    failed: failed.length,
    layers: [],
  });
  s.failed.forEach((f, i) => {
    expect(f.trim(), res.stderr).toMatch(failed[i]!);
  });
  if (e.maxExitMs !== undefined) {
    expect(exitLatency(res), 'ms from the exit call to the end of the child').toBeLessThan(e.maxExitMs);
  }
  for (const m of e.stderr ?? []) expect(res.stderr).toMatch(m);
  for (const m of e.notStderr ?? []) expect(res.stderr).not.toMatch(m);
}

/** The matrix against one build; `controlRuns`: runs of each guard-off control. */
export function matrix(build: Build, controlRuns: number): void {
  describe(`exit-path matrix, ${build} build (crash-reproducing stand-in runtime)`, () => {
    // A build that is missing fails here, never skips: CI builds both (tooling/exit-paths build:native).
    it(`the ${build} build of @devexit/native exists`, () => {
      expect(existsSync(addons[build]), addons[build]).toBe(true);
    });
    for (const r of rows) {
      const e = build === 'portable' ? { ...r.expect, ...r.portable } : r.expect;
      const name = r.name ?? r.row;
      it(
        r.reachesTeardown
          ? `${name}: ${RUNS} runs exit as asked, each close exactly once`
          : `${name}: ${RUNS} runs end by the signal, no close runs, no crash`,
        async () => {
          const results = await runMany(RUNS, options(build, r));
          for (const res of results) check(res, e);
        },
      );
      if (r.reachesTeardown) {
        it(`${name}: the same fixture with the guard disabled crashes (control, ${controlRuns} runs)`, async () => {
          const results = await runMany(controlRuns, options(build, r, { DEVEXIT_GUARD: '0' }));
          // Without devexit the stand-in's teardown kills it: the row above can fail.
          expect(
            results.filter((res) => crashed(res)).length,
            JSON.stringify(outcomes(results)),
          ).toBeGreaterThan(0);
          for (const res of results) expect(res.timedOut).toBe(false);
        });
      } else {
        it(`${name}: nothing runs and nothing crashes with the guard off`, async () => {
          const off = await runMany(Math.min(RUNS, 5), options(build, r, { DEVEXIT_GUARD: '0' }));
          for (const res of off) expect(summary(res, e.signal ?? undefined).crashed).toBe(false);
        });
      }
    }
  });
}
