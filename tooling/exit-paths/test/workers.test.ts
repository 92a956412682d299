import { join } from 'node:path';
import { type ChildResult, exitLatency, outcomes, runMany, testRuns } from '@devexit/testkit';
import { describe, expect, it } from 'vitest';

// Workers and critical sections (issue 16): the protocol, with timer-backed sections. The crash
// they prevent, with a real native binding and its controls, is in tooling/worker-fixtures.
const script = join(__dirname, '..', 'fixtures', 'workers.cjs');
const show = (r: ChildResult) =>
  `code ${r.code} signal ${r.signal} in ${Math.round(r.ms)} ms\n${r.stdout}\n${r.stderr.slice(-2000)}`;
const closes = (r: ChildResult) =>
  r.stdout
    .split('\n')
    .filter((l) => l.startsWith('close '))
    .sort();
const refusals = (r: ChildResult) => r.stdout.split('\n').filter((l) => l.startsWith('refused '));
const ids = (n: number, from = 1) => Array.from({ length: n }, (_, i) => `close ${i + from}`).sort();

describe("a Worker's closes run on its thread, once, after its critical sections, on every ending", () => {
  it.each([
    ['process.exit() in main', 'exit', 0],
    ['an uncaught error in main', 'throw', 1],
    ['process.reallyExit() in main', 'reallyExit', 0],
    ['terminate() of each Worker', 'terminate', 0],
    ['shutdown() in main', 'shutdown', 0],
  ])(
    '%s: 3 Workers in a section loop: each close ran exactly once, new sections refused (10 runs)',
    async (_, how, code) => {
      const results = await runMany(testRuns(10), {
        script,
        args: ['many', '3', how as string],
        timeoutMs: 20_000,
      });
      for (const r of results) {
        expect({ code: r.code, signal: r.signal }, show(r)).toEqual({ code, signal: null });
        expect(closes(r), show(r)).toEqual(ids(3));
        // Each Worker's loop met the refusal (ERR_DEVEXIT_EXITING), without its fn being called.
        for (const l of refusals(r)) expect(l, show(r)).toMatch(/ ERR_DEVEXIT_EXITING$/);
        if (how === 'terminate') expect(r.stdout, show(r)).toContain('terminated 1,1,1');
        if (how === 'shutdown') expect(r.stdout, show(r)).toContain('shutdown 3 entries');
      }
    },
  );

  // Workers that announced themselves while the main thread was busy: the main thread reads a
  // Worker's 'looping' and exits at once, perhaps before the Worker's announcement (another
  // channel); each Worker waits until its creator knew it before its own code runs.
  it.each([
    ['process.exit()', 'exit'],
    ['process.reallyExit()', 'reallyExit'],
  ])(
    '3 Workers started while main was busy, then %s: each close ran exactly once (10 runs)',
    async (_, how) => {
      const results = await runMany(testRuns(10), { script, args: ['busy', '3', how], timeoutMs: 20_000 });
      for (const r of results) {
        expect({ code: r.code, signal: r.signal }, show(r)).toEqual({ code: 0, signal: null });
        expect(closes(r), show(r)).toEqual(ids(3));
      }
    },
  );

  // 100 Workers start in seconds on 2 cores: two runs.
  it('100 Workers, main process.exit(): every close once, within the deadline (2 runs)', async () => {
    const results = await runMany(testRuns(2), {
      script,
      args: ['many', '100', 'exit'],
      timeoutMs: 120_000,
    });
    for (const r of results) {
      expect({ code: r.code, signal: r.signal }, show(r)).toEqual({ code: 0, signal: null });
      expect(closes(r), show(r)).toEqual(ids(100));
    }
  });

  it.each([
    ['process.exit() in main', 'exit'],
    ['terminate() of the parent Worker', 'terminate'],
  ])('nested Workers (main -> parent -> child), %s: both closes once (10 runs)', async (_, how) => {
    const results = await runMany(testRuns(10), { script, args: ['nested', how], timeoutMs: 20_000 });
    for (const r of results) {
      expect({ code: r.code, signal: r.signal }, show(r)).toEqual({ code: 0, signal: null });
      expect(closes(r), show(r)).toEqual(ids(2));
    }
  });

  it.each([
    ['terminate() racing process.exit()', 'x'],
    ["terminate(), process.exit() and the Worker's own process.exit() at once", 'self'],
  ])('%s: the close ran exactly once, exit 0 (20 runs)', async (_, how) => {
    const results = await runMany(testRuns(20), { script, args: ['race', how], timeoutMs: 20_000 });
    for (const r of results) {
      expect({ code: r.code, signal: r.signal }, show(r)).toEqual({ code: 0, signal: null });
      expect(closes(r), show(r)).toEqual(['close 1']);
    }
  });
});

describe('a critical section that never ends: the process ends at the deadline, the report names it', () => {
  const run = (kind: string, how: string, native: boolean) =>
    runMany(testRuns(5), {
      script,
      args: ['stuck', kind, how],
      env: { DEVEXIT_TIMEOUT_MS: '500', FIXTURE_NATIVE: native ? '1' : '0' },
      timeoutMs: 20_000,
    });

  it.each([
    ['a blocking call (sync)', 'sync', 'spin', 'it is blocked inside a call'],
    ['a promise that never settles (async)', 'async', 'forever', undefined],
  ])(
    '%s, main process.exit(3), @devexit/native in main: exit 3 at the deadline, no teardown (5 runs)',
    async (_, kind, name, blocked) => {
      const results = await run(kind, 'exit', true);
      expect(outcomes(results)).toEqual({ 'code 3': results.length });
      for (const r of results) {
        // From process.exit(3) to the end: the 500 ms deadline, not the section's for ever.
        expect(exitLatency(r), show(r)).toBeLessThan(5000);
        const entry = r.report.find((e) => e.device.type === 'thread');
        expect(entry, show(r)).toMatchObject({
          service: `critical:${name}`,
          outcome: 'timeout',
          layer: 'js-exit',
        });
        if (blocked) expect(entry?.error, show(r)).toContain(blocked);
        expect(r.stderr, show(r)).toMatch(
          /critical sections still running at the deadline .*exiting with code 3/,
        );
        // Its closes did not run under the open section.
        expect(closes(r), show(r)).toEqual([]);
      }
    },
  );

  it('terminate() of a Worker stuck in a section: the process ends at the deadline with process.exitCode, else 1 (5 runs)', async () => {
    const results = await run('async', 'terminate', true);
    expect(outcomes(results)).toEqual({ 'code 1': results.length });
    for (const r of results) {
      expect(
        r.report.find((e) => e.device.type === 'thread'),
        show(r),
      ).toMatchObject({
        service: 'critical:forever',
        layer: 'terminate',
      });
      expect(r.stdout, show(r)).not.toContain('terminated');
    }
  });

  it('without @devexit/native in main the exit code cannot be kept: the process ends by SIGKILL at the deadline, as the README says (3 runs)', async () => {
    const results = await runMany(testRuns(3), {
      script,
      args: ['stuck', 'sync', 'exit'],
      env: { DEVEXIT_TIMEOUT_MS: '500', FIXTURE_NATIVE: '0' },
      timeoutMs: 20_000,
    });
    for (const r of results) {
      expect({ code: r.code, signal: r.signal }, show(r)).toEqual({ code: null, signal: 'SIGKILL' });
      expect(r.stderr, show(r)).toMatch(/ending the process by SIGKILL \(load @devexit\/native/);
    }
  });
});
