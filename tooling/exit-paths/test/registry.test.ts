import { copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { StressResult } from '@devexit/standins';
import {
  type ChildResult,
  closeCounts,
  ending,
  runChild,
  runMany,
  runUntilHit,
  testRuns,
} from '@devexit/testkit';
import { describe, expect, it } from 'vitest';

const fixtures = join(__dirname, '..', 'fixtures');
const addon = join(
  dirname(require.resolve('@devexit/native/package.json')),
  'build',
  'Release',
  'devexit_native.node',
);

// A stress.cjs child (the stand-in fixture's stress()): it ended cleanly, all `total` keys were
// either accepted or refused as exiting, and each accepted close ran exactly once, refused ones
// never. Returns the fixture's counts for the row's own checks.
function eachCloseOnce(r: ChildResult, total: number): StressResult {
  expect({ code: r.code, signal: r.signal }, r.stderr).toEqual({ code: 0, signal: null });
  const s = JSON.parse(r.stdout) as StressResult;
  expect(s.total).toBe(total);
  expect(s.accepted + s.refused).toBe(s.total);
  expect(s.otherStatus).toBe(0);
  expect(s.acceptedNotClosedOnce).toBe(0);
  expect(s.refusedButClosed).toBe(0);
  expect(s.closedTwiceOrMore).toBe(0);
  expect(s.closedOnce).toBe(s.accepted);
  return s;
}

describe('native registry (child processes)', () => {
  it('8 native threads register 100k keys while a close runs: each accepted close runs exactly once, later ones are refused', async () => {
    const options = { script: join(fixtures, 'stress.cjs'), args: ['8', '12500', '3'], timeoutMs: 60_000 };
    const raced = (r: ChildResult) => {
      try {
        return JSON.parse(r.stdout).refused > 0;
      } catch {
        return false;
      }
    };
    const runs = await runMany(testRuns(3), options);
    // Whether a run races (the close lands while keys are still being registered) is timing: a
    // machine's load can make a few runs all register before it. More, until one raced (20 at most).
    if (!runs.some(raced)) runs.push(...(await runUntilHit(20, options, raced)));
    for (const r of runs) {
      const s = eachCloseOnce(r, 100_000);
      expect(s.lateStatus).toBe(-1); // DEVEXIT_ERR_EXITING: refused, not silently accepted
      expect(s.accepted).toBeGreaterThan(0);
    }
    // At least one run must have raced: some keys accepted, some refused.
    expect(runs.some(raced)).toBe(true);
  });

  it('8 native threads register 320k keys, 131k and more before the close, each key also again (the key table with its filter, pending keys and re-indexes by region, from 131,072 keys): each accepted close runs exactly once, no key twice', async () => {
    // The close comes after 1 s: by then at least the 131,072 keys that take the table past its
    // filter threshold (2 MiB of index) are in, also on a loaded machine or under a sanitizer.
    // Each thread registers again the key it just registered (pending in the table) and the one
    // 1000 before (in its index): a registry whose filter answered "new" for them accepted 377,867.
    const runs = await runMany(testRuns(2), {
      script: join(fixtures, 'stress.cjs'),
      args: ['8', '40000', '1000', 'dups'],
      timeoutMs: 90_000,
    });
    for (const r of runs) {
      const s = eachCloseOnce(r, 320_000);
      expect(s.accepted).toBeGreaterThan(131_072);
      expect([s.duplicatesAccepted, s.duplicatesOtherStatus, s.duplicatesClosed]).toEqual([0, 0, 0]);
    }
  });

  it('shutdown(): the closes run on a helper thread while the event loop turns; registrations are refused at once, yet is_exiting() stays 0 until they ran', async () => {
    const r = await runChild({ script: join(fixtures, 'shutdown.cjs'), args: ['drain'], timeoutMs: 30_000 });
    expect({ code: r.code, signal: r.signal }, r.stderr).toEqual({ code: 0, signal: null });
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({
      jsExiting: true,
      sameCall: true,
      // register_close refused (DEVEXIT_ERR_EXITING) although is_exiting() said 0: the fixture
      // checks is_exiting() first and would have thrown "the process is exiting".
      lateStart: 'register_close refused: -1',
    });
    expect(out.ms).toBeGreaterThanOrEqual(290);
    expect(out.ticks, 'the event loop turned while the 300 ms close ran').toBeGreaterThanOrEqual(5);
    expect([...out.entries].sort()).toEqual(['standin:0/slow shutdown ok', 'standin:1/loop shutdown ok']);
    // The fixture's closes do not know the shutdown layer: they say nothing of a drain.
    expect(out.drained).toEqual([null, null]); // undefined, as JSON writes it in an array
    // Nothing left for the exit layers.
    expect(r.report.filter((e) => e.layer !== 'shutdown')).toEqual([]);
  });

  it('shutdown() racing process.exit(5), services calling the crash-reproducing runtime: exit 5, each close exactly once, no crash (20 runs)', async () => {
    const results = [];
    for (const ms of ['0', '1', '3', '10']) {
      results.push(
        ...(await runMany(testRuns(5), {
          script: join(fixtures, 'shutdown.cjs'),
          args: ['race', ms],
          timeoutMs: 30_000,
        })),
      );
    }
    for (const r of results) {
      expect(ending(r), r.stderr).toEqual({
        code: 5,
        signal: null,
        timedOut: false,
      });
      expect(closeCounts(r.report), r.stderr).toEqual({ 'standin:0/loop': 1, 'standin:1/other': 1 });
    }
  });

  for (const order of ['main-first', 'worker-first']) {
    it(`two copies of @devexit/native in one process share one registry (${order})`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'devexit-copy-'));
      const copy = join(dir, 'devexit_native.node');
      copyFileSync(addon, copy);
      const r = await runChild({ script: join(fixtures, 'twoCopies.cjs'), args: [copy, order] });
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out).toMatchObject({
        sameRegistry: true,
        fixtureSees: true,
        workerType: true,
        closedByCopy: true,
      });
      expect(out.typeFromFirst).toBe(out.typeFromCopy);
      // Exactly one owner; the other copy names the owner's path.
      expect([out.firstOwner, out.copyOwner].filter(Boolean)).toHaveLength(1);
      expect(out.copySharedWith).toMatch(/devexit_native\.node$/);
    });
  }

  it('a close past the deadline: warning, library teardown skipped, exit code kept, no crash', async () => {
    const runs = await runMany(testRuns(5), {
      script: join(fixtures, 'closeBehaviour.cjs'),
      args: ['timeout'],
    });
    for (const r of runs) {
      expect({ code: r.code, signal: r.signal }, r.stderr).toEqual({ code: 5, signal: null });
      expect(r.stderr).toMatch(
        /closing services took longer than 300 ms \(configure\(\{ timeoutMs: 300 \}\)\); still running: standin:0\/loop; skipping library teardown: exiting with code 5 \(onTimeout 'exit', the default\)/,
      );
      expect(r.report.find((e) => e.device.index === 0)?.outcome).toBe('timeout');
      expect(r.report.find((e) => e.device.index === 1)?.outcome).toBe('ok');
      expect(r.ms).toBeLessThan(4000); // not the 5 s the close wanted
    }
  });

  it('a deadline passing while a helper thread is inside a close: same warning and exit code', async () => {
    const runs = await runMany(testRuns(5), {
      script: join(fixtures, 'closeBehaviour.cjs'),
      args: ['timeout-puller'],
    });
    for (const r of runs) {
      expect({ code: r.code, signal: r.signal }, r.stderr).toEqual({ code: 4, signal: null });
      expect(r.stderr).toMatch(/still running: standin:1\/loop; skipping library teardown/);
      expect(r.report.map((e) => `${e.device.index} ${e.outcome}`).sort()).toEqual(['0 ok', '1 timeout']);
      expect(r.ms).toBeLessThan(4000);
    }
  });

  it('a deadline passing in the main-thread TLS layer keeps the exit code too', async () => {
    const runs = await runMany(testRuns(5), {
      script: join(fixtures, 'closeBehaviour.cjs'),
      args: ['timeout-tls'],
    });
    for (const r of runs) {
      expect({ code: r.code, signal: r.signal }, r.stderr).toEqual({ code: 6, signal: null });
      expect(r.report.map((e) => `${e.layer} ${e.outcome}`)).toEqual(['tls timeout']);
    }
  });

  it("onTimeout 'warn' warns and continues", async () => {
    const r = await runChild({ script: join(fixtures, 'closeBehaviour.cjs'), args: ['timeout-warn'] });
    expect({ code: r.code, signal: r.signal }).toEqual({ code: 5, signal: null });
    expect(r.stderr).toMatch(
      /still running: standin:0\/loop; continuing with library teardown \(onTimeout 'warn' from configure\(\{ onTimeout: 'warn' \}\)\)/,
    );
  });

  it('a failing close is reported on stderr and the other closes still run', async () => {
    const runs = await runMany(testRuns(5), {
      script: join(fixtures, 'closeBehaviour.cjs'),
      args: ['failure'],
    });
    for (const r of runs) {
      expect({ code: r.code, signal: r.signal }).toEqual({ code: 3, signal: null });
      expect(r.stderr).toContain('devexit: close of standin:0/loop failed: fixture close failure on purpose');
      expect(closeCounts(r.report)).toEqual({ 'standin:0/loop': 1, 'standin:1/loop': 1 });
    }
  });

  it('services on one device close last-registered-first (native and JS)', async () => {
    const r = await runChild({ script: join(fixtures, 'closeBehaviour.cjs'), args: ['lifo'] });
    expect(r.code, r.stderr).toBe(0);
    expect(r.report.filter((e) => e.device.type === 'order').map((e) => e.service)).toEqual([
      'third',
      'second',
      'first',
    ]);
    expect(r.stderr.match(/js close \w/g)).toEqual(['js close c', 'js close b', 'js close a']);
  });

  it('an explicit close unregisters: exit closes only what was opened after it', async () => {
    const runs = await runMany(testRuns(5), {
      script: join(fixtures, 'closeBehaviour.cjs'),
      args: ['explicit-then-exit'],
    });
    for (const r of runs) {
      expect({ code: r.code, signal: r.signal }, r.stderr).toEqual({ code: 0, signal: null });
      expect(r.stderr).toContain('explicit closes: 2');
      const atExit = r.report.filter((e) => e.layer !== 'explicit');
      expect(closeCounts(atExit)).toEqual({ 'standin:2/loop': 1 });
    }
  });

  it('devices close in parallel: 8 closes of 200 ms overlap', async () => {
    const r = await runChild({ script: join(fixtures, 'closeBehaviour.cjs'), args: ['parallel'] });
    expect(r.code, r.stderr).toBe(0);
    const closes = r.report.filter((e) => e.device.type === 'slow');
    expect(closes).toHaveLength(8);
    // Sequential closes would need 1600 ms of wall time; the whole child must take far less.
    expect(r.ms).toBeLessThan(1500);
  });

  it('devices close in parallel in the TLS layer too (closes on helper threads only)', async () => {
    const r = await runChild({ script: join(fixtures, 'closeBehaviour.cjs'), args: ['parallel-tls'] });
    expect(r.code, r.stderr).toBe(0);
    const closes = r.report.filter((e) => e.device.type === 'slow');
    expect(closes.map((e) => e.layer)).toEqual(Array(8).fill('tls'));
    expect(r.ms).toBeLessThan(1500);
  });

  it('JS and native closes are reported in one format (text and JSON)', async () => {
    for (const mode of ['1', 'json']) {
      const r = await runChild({
        script: join(fixtures, 'closeBehaviour.cjs'),
        args: ['lifo'],
        env: { DEVEXIT_REPORT: mode },
      });
      expect(r.code, r.stderr).toBe(0);
      const lines = r.stderr.split('\n').filter((l) => /^devexit(:report|: ok) /.test(l));
      const js = lines.filter((l) => l.includes('jsorder'));
      const nat = lines.filter((l) => / order:0\/|"type":"order"/.test(l));
      expect([js.length, nat.length]).toEqual([3, 3]);
      if (mode === '1') {
        for (const l of lines)
          expect(l).toMatch(/^devexit: ok [\w.:-]+:\d+\/\w+ in \d+\.\d\d ms \(js-exit\)$/);
      } else {
        const keys = (l: string) =>
          JSON.stringify(Object.keys(JSON.parse(l.slice('devexit:report '.length))));
        expect(new Set(lines.map(keys)).size).toBe(1);
        for (const l of lines) expect(l).toMatch(/"ms":\d+(\.\d{1,3})?,/);
      }
    }
  });

  it('DEVEXIT_REPORT=1 prints one readable line per close', async () => {
    const r = await runChild({
      script: join(fixtures, 'closeBehaviour.cjs'),
      args: ['failure'],
      env: { DEVEXIT_REPORT: '1' },
    });
    expect(r.stderr).toMatch(/^devexit: error standin:0\/loop in [0-9.]+ ms \(js-exit\)$/m);
    expect(r.stderr).toMatch(/^devexit: ok standin:1\/loop in [0-9.]+ ms \(js-exit\)$/m);
  });
});

describe('arming the main-thread guard', () => {
  it('loaded first in a Worker: .init_array cannot arm it, module init on the main thread does', async () => {
    const r = await runChild({ script: join(fixtures, 'armedBy.cjs') });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ armed: true, by: 'module_init' });
  });

  it('with the --require preload it is armed from .init_array before any Worker', async () => {
    const r = await runChild({
      script: join(fixtures, 'armedBy.cjs'),
      nodeArgs: ['-r', '@devexit/native/register'],
    });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ armed: true, by: 'init_array' });
  });
});
