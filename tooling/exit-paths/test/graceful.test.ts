import { join } from 'node:path';
import { type ChildResult, closeCounts, exitLatency, outcomes, runMany, testRuns } from '@devexit/testkit';
import { describe, expect, it } from 'vitest';

// The graceful path under hostile timing (issue 17), in child processes with @devexit/native
// loaded, repeated; each case beside its control. No assertion depends on two timers' order:
// signals are sent on the child's `ready` line, and the durations asserted are bounds with
// seconds of margin (a close stuck for ever, against a 500 ms deadline).
const script = join(__dirname, '..', 'fixtures', 'graceful.cjs');
const marks = (r: ChildResult) => r.stderr.split('\n').filter((l) => /^(close|cleanup|entries)/.test(l));
const show = (r: ChildResult) =>
  `code ${r.code} signal ${r.signal} in ${Math.round(r.ms)} ms\n${r.stderr.slice(-3000)}`;
const SIGNALS = { DEVEXIT_SIGNALS: 'SIGTERM', DEVEXIT_TIMEOUT_MS: '500' };

describe('signals with a stuck close: bounded by the deadline, ended by the signal', () => {
  it.each([
    ['stuck for ever', '-1'],
    ['stuck for 10 s', '10000'],
  ])(
    'a JS close %s: SIGTERM ends the process at the deadline, by SIGTERM, the report naming the close (10 runs)',
    async (_, ms) => {
      const results = await runMany(testRuns(10), {
        script,
        args: ['stuck-close', ms],
        env: SIGNALS,
        signalOnReady: 'SIGTERM',
        timeoutMs: 20_000,
      });
      expect(outcomes(results)).toEqual({ SIGTERM: results.length });
      for (const r of results) {
        // From the signal to the end: 500 ms of deadline, far below the close's 10 s (or for ever).
        expect(exitLatency(r), show(r)).toBeLessThan(5000);
        expect(marks(r), show(r)).toEqual(['close stuck']);
        expect(r.stderr, show(r)).toMatch(
          /still running: wgpu:0\/stuck \(a JS close\); not started: wgpu:0\/quick; ending the process by signal 15/,
        );
        // Each close has its one report line, the watchdog's: quick never ran (the process ended first).
        expect(closeCounts(r.report), show(r)).toEqual({ 'wgpu:0/stuck': 1, 'wgpu:0/quick': 1 });
        expect(r.report[0], show(r)).toMatchObject({
          service: 'stuck',
          layer: 'shutdown',
          outcome: 'timeout',
          error: 'a JS close still running at the deadline',
        });
        expect(r.report[1], show(r)).toMatchObject({
          service: 'quick',
          layer: 'shutdown',
          outcome: 'timeout',
          error: 'not started before the deadline',
        });
      }
    },
  );

  it("control: with onTimeout 'warn' the same 2 s close runs to its end; then the signal ends the process (3 runs)", async () => {
    const results = await runMany(testRuns(3), {
      script,
      args: ['stuck-close', '2000'],
      env: { ...SIGNALS, DEVEXIT_ON_TIMEOUT: 'warn' },
      signalOnReady: 'SIGTERM',
      timeoutMs: 20_000,
    });
    for (const r of results) {
      expect({ code: r.code, signal: r.signal }, show(r)).toEqual({ code: null, signal: 'SIGTERM' });
      expect(exitLatency(r), show(r)).toBeGreaterThan(2000);
      expect(marks(r), show(r)).toEqual(['close stuck', 'close quick']);
      expect(r.stderr, show(r)).toMatch(/continuing \(onTimeout 'warn'/);
    }
  });
});

describe("the application's own once-listener decides how the process ends", () => {
  /** `runs` children of an app-once case: exit 7 after the app's cleanup, devexit's close once. */
  async function appOnce(runs: number, which: string, env: Record<string, string> = {}) {
    const results = await runMany(runs, {
      script,
      args: [which],
      env,
      signalOnReady: 'SIGTERM',
      timeoutMs: 20_000,
    });
    for (const r of results) {
      expect({ code: r.code, signal: r.signal }, show(r)).toEqual({ code: 7, signal: null });
      expect(marks(r), show(r)).toEqual(['close a', 'cleanup done']);
      if (env.DEVEXIT_SIGNALS || which === 'app-once-first')
        expect(closeCounts(r.report), show(r)).toEqual({ 'wgpu:0/a': 1 });
    }
  }

  it('DEVEXIT_SIGNALS and an app once(SIGTERM) that awaits shutdown(), cleans up 200 ms, exits 7: exit 7 after its cleanup, the close once (10 runs)', async () => {
    await appOnce(testRuns(10), 'app-once', { DEVEXIT_SIGNALS: 'SIGTERM' });
  });

  it('the app listened first (its once(SIGTERM) added before devexit loaded, then configure({ signals })): exit 7 after its cleanup, the close once (10 runs)', async () => {
    await appOnce(testRuns(10), 'app-once-first');
  });

  it('control: the same app without DEVEXIT_SIGNALS exits 7 the same way (5 runs)', async () => {
    await appOnce(testRuns(5), 'app-once');
  });
});

describe('JS closes run exactly once whatever an observer, a logger or a native close does', () => {
  it.each([
    ['an exit', 'exit'],
    ['a shutdown()', 'shutdown'],
  ])(
    'a devexit:exit:start subscriber calling process.exit(4) at %s: every JS close ran once, exit 4 (10 runs)',
    async (_, how) => {
      const results = await runMany(testRuns(10), {
        script,
        args: ['start-observer-exits', how],
        timeoutMs: 20_000,
      });
      for (const r of results) {
        expect({ code: r.code, signal: r.signal }, show(r)).toEqual({ code: 4, signal: null });
        expect(marks(r).sort(), show(r)).toEqual(['close a', 'close b', 'close c']);
        expect(closeCounts(r.report), show(r)).toEqual({ 'wgpu:0/a': 1, 'wgpu:0/b': 1, 'wgpu:0/c': 1 });
      }
    },
  );

  it.each([
    ['throws at an exit', 'throw-exit', 0],
    ['throws during shutdown() (Node reports its error: exit 1)', 'throw-shutdown', 1],
    ['calls closeServices() and shutdown() at an exit', 'reenter-exit', 0],
    ['calls closeServices() and shutdown() during shutdown()', 'reenter-shutdown', 0],
  ])('a devexit:service:close subscriber that %s: each close ran once (5 runs)', async (_, how, code) => {
    const results = await runMany(testRuns(5), {
      script,
      args: ['observer-misbehaves', how as string],
      timeoutMs: 20_000,
    });
    for (const r of results) {
      expect({ code: r.code, signal: r.signal }, show(r)).toEqual({ code, signal: null });
      expect(
        marks(r).filter((l) => l.startsWith('close')),
        show(r),
      ).toEqual(['close c', 'close b', 'close a']);
      expect(closeCounts(r.report), show(r)).toEqual({ 'wgpu:0/a': 1, 'wgpu:0/b': 1, 'wgpu:0/c': 1 });
    }
  });

  it.each([
    ['shutdown()', 'shutdown'],
    ['closeServices() (the control: it always ran the JS closes first)', 'closeServices'],
  ])(
    'a native close calling exit(6) during %s: the JS closes ran before it, exit 6 (10 runs)',
    async (_, how) => {
      const results = await runMany(testRuns(10), {
        script,
        args: ['native-exit-in-shutdown', how],
        timeoutMs: 20_000,
      });
      for (const r of results) {
        expect({ code: r.code, signal: r.signal }, show(r)).toEqual({ code: 6, signal: null });
        expect(marks(r).sort(), show(r)).toEqual(['close a', 'close b']);
      }
    },
  );

  it('a devexit:service:close subscriber taking 2 s with a 500 ms deadline: the exit ends at the deadline with its code (5 runs)', async () => {
    const results = await runMany(testRuns(5), {
      script,
      args: ['slow-observer'],
      env: { DEVEXIT_TIMEOUT_MS: '500' },
      timeoutMs: 20_000,
    });
    for (const r of results) {
      expect({ code: r.code, signal: r.signal }, show(r)).toEqual({ code: 3, signal: null });
      expect(exitLatency(r), show(r)).toBeLessThan(1900);
      expect(r.stderr, show(r)).toMatch(/still running: an observer of devexit:service:close/);
    }
  });

  it("control: with onTimeout 'warn' the slow subscriber holds the exit its 2 s (3 runs)", async () => {
    const results = await runMany(testRuns(3), {
      script,
      args: ['slow-observer'],
      env: { DEVEXIT_TIMEOUT_MS: '500', DEVEXIT_ON_TIMEOUT: 'warn' },
      timeoutMs: 20_000,
    });
    for (const r of results) {
      expect(r.code, show(r)).toBe(3);
      expect(exitLatency(r), show(r)).toBeGreaterThan(2000);
    }
  });

  it('a logger that exits when told of a failing close: that close has its report line, the others ran once, exit 5 (10 runs)', async () => {
    const results = await runMany(testRuns(10), { script, args: ['logger-exits'], timeoutMs: 20_000 });
    for (const r of results) {
      expect({ code: r.code, signal: r.signal }, show(r)).toEqual({ code: 5, signal: null });
      expect(marks(r).sort(), show(r)).toEqual(['close a', 'close bad', 'close c']);
      expect(closeCounts(r.report), show(r)).toEqual({ 'wgpu:0/a': 1, 'wgpu:0/bad': 1, 'wgpu:0/c': 1 });
      expect(
        r.report.find((e) => e.service === 'bad'),
        show(r),
      ).toMatchObject({ outcome: 'error', error: 'no luck' });
    }
  });

  it.each([
    ['closeServices()', 'late-close-explicit'],
    ['the exit', 'late-close-exit'],
  ])(
    "a close past the deadline (onTimeout 'warn') at %s has exactly one report line; each close one entry (5 runs)",
    async (_, which) => {
      const results = await runMany(testRuns(5), {
        script,
        args: [which],
        env: { DEVEXIT_TIMEOUT_MS: '300', DEVEXIT_ON_TIMEOUT: 'warn' },
        timeoutMs: 20_000,
      });
      for (const r of results) {
        expect(r.code, show(r)).toBe(0);
        expect(closeCounts(r.report), show(r)).toEqual({ 'wgpu:0/a': 1, 'wgpu:0/late': 1, 'wgpu:0/c': 1 });
        if (which === 'late-close-explicit')
          expect(
            marks(r).filter((l) => l.startsWith('entries')),
            show(r),
          ).toEqual(['entries c:ok,late:timeout,a:timeout']);
      }
    },
  );
});
