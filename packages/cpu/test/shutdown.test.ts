import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CloseReportEntry } from '@devexit/core';
import { type ChildResult, childEnv, runChild, runMany, summary, testRuns } from '@devexit/testkit';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// shutdown() and the opt-in signals on the cpu backend, in child processes (a shutdown is final).
const fixture = (name: string) => join(__dirname, 'fixtures', name);
const show = (r: ChildResult) =>
  `code=${r.code} signal=${r.signal} timedOut=${r.timedOut}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr.slice(-3000)}`;
const lines = (r: ChildResult, prefix: string) => r.stderr.split('\n').filter((l) => l.startsWith(prefix));
const queueCloses = (r: ChildResult) =>
  r.report.filter((e) => e.device.type === 'cpu' && e.service === 'queue');

// A generous deadline: a loaded machine must not turn a drain into a drop.
const SIGNALS = { DEVEXIT_SIGNALS: 'SIGINT,SIGTERM', DEVEXIT_TIMEOUT_MS: '20000' };

describe('shutdown(): a JS close and the native queues (child processes)', () => {
  it.each([
    ['without a drain, runs before the native queue finished (the read settles after it)', 'plain', false],
    ['with a drain awaiting the pending read, runs after that read settled', 'drain', true],
  ])(
    `a JS close %s; the queue drains either way (${testRuns(5)} runs each)`,
    async (_, which, settledFirst) => {
      for (const r of await runMany(testRuns(5), {
        script: fixture('shutdownOrder.cjs'),
        args: [which],
        env: { DEVEXIT_TIMEOUT_MS: '20000' },
        timeoutMs: 60_000,
      })) {
        expect({ code: r.code, signal: r.signal }, show(r)).toEqual({ code: 0, signal: null });
        const out = r.stdout.split('\n').filter(Boolean);
        const order = settledFirst ? ['read 100', 'close settled=true'] : ['close settled=false', 'read 100'];
        expect(out.slice(0, 2), show(r)).toEqual(order);
        // A JS close without a drain does not say whether it drained.
        expect(out[2], show(r)).toBe(`report app/svc:${settledFirst ? 'true' : 'undefined'},cpu/queue:true`);
      }
    },
  );
});

describe('signals reach a device opened in a Worker, with only @devexit/core in main (child processes)', () => {
  const run = (env: Record<string, string>) =>
    runMany(testRuns(10), {
      script: fixture('workerSignal.cjs'),
      env,
      signalOnReady: 'SIGTERM',
      timeoutMs: 60_000,
    });

  it('DEVEXIT_SIGNALS=SIGTERM: the Worker drains (its read resolves), the queue closes once in shutdown, the process ends by SIGTERM (10 runs)', async () => {
    for (const r of await run({ DEVEXIT_SIGNALS: 'SIGTERM', DEVEXIT_TIMEOUT_MS: '20000' })) {
      expect(summary(r, 'SIGTERM'), show(r)).toEqual({
        code: null,
        signal: 'SIGTERM',
        timedOut: false,
        crashed: false,
        closes: { 'cpu:0/queue': 1 },
        failed: [],
      });
      expect(r.stdout, show(r)).toContain('native in main: false');
      expect(r.stdout, show(r)).toContain('read 200');
      expect(queueCloses(r)[0], show(r)).toMatchObject({ layer: 'shutdown', drained: true });
    }
  });

  it('control: without DEVEXIT_SIGNALS, SIGTERM ends the process at once: the read is lost, nothing closed (10 runs)', async () => {
    for (const r of await run({})) {
      expect(summary(r, 'SIGTERM'), show(r)).toMatchObject({ signal: 'SIGTERM', crashed: false, closes: {} });
      expect(r.stdout, show(r)).not.toContain('read 200');
    }
  });
});

describe('shutdown() together with a device close: one drain, nothing lost (child processes)', () => {
  const run = (args: string[]) =>
    runMany(testRuns(4), { script: fixture('closeDuringShutdown.cjs'), args, timeoutMs: 60_000 });
  const reports = (r: ChildResult) =>
    lines(r, 'report ').map((l) => JSON.parse(l.slice('report '.length)) as Array<Record<string, unknown>>);

  it.each([
    ['shutdown(), then device.close() in the same turn', ['shutdown-first']],
    ['device.close(), then shutdown()', ['close-first']],
    ['shutdown(), then asyncDispose()', ['dispose']],
    ['shutdown(), device.close() a turn later', ['shutdown-then-close', '0']],
    ['shutdown(), device.close() 2 ms later', ['shutdown-then-close', '2']],
    ['shutdown(), device.close() 20 ms later', ['shutdown-then-close', '20']],
  ])(
    '%s: the pending read resolves with its result; the report, where it has the close, says drained (4 runs)',
    async (_, args) => {
      for (const r of await run(args)) {
        expect({ code: r.code, signal: r.signal }, show(r)).toEqual({ code: 0, signal: null });
        expect(lines(r, 'read '), show(r)).toEqual(['read 100']);
        for (const e of reports(r)[0] ?? [])
          expect(e, show(r)).toMatchObject({ service: 'queue', drained: true, dropped: 0 });
      }
    },
  );

  it('control: closeServices() 2 ms into the drain drops the rest: the read rejects, the report says so (4 runs)', async () => {
    for (const r of await run(['closeServices', '2'])) {
      expect(lines(r, 'read '), show(r)).toEqual(['read failed ERR_DEVEXIT_DEVICE_CLOSED']);
      expect(reports(r)[0], show(r)).toEqual([expect.objectContaining({ service: 'queue', drained: false })]);
    }
  });
});

describe("shutdown()'s deadline with launches still queued: dropped counts the commands (child processes)", () => {
  // 100 launches (then a read), shutdown() with a 150 ms deadline that runs a few dozen of them.
  // The queue sends what one synchronous run made as one batch: the report said dropped: 1 for a
  // whole batch queued (70 launches and the read never ran, found by a sweep), and nothing for the
  // rest of the batch it was running: with no read after the batch, "drained: true, dropped: 0".
  const run = async (how: string) => {
    const results = await runMany(testRuns(4), {
      script: fixture('droppedCount.cjs'),
      args: [how],
      env: { DEVEXIT_TIMEOUT_MS: '150' },
      timeoutMs: 60_000,
    });
    return results.map((r) => {
      expect({ code: r.code, signal: r.signal }, show(r)).toEqual({ code: 0, signal: null });
      const [entry] = JSON.parse(lines(r, 'report ')[0]?.slice('report '.length) ?? '[]') as Array<{
        drained: boolean;
        dropped: number;
      }>;
      expect(entry, show(r)).toMatchObject({ service: 'queue', drained: false });
      return { r, dropped: entry?.dropped ?? 0 };
    });
  };

  it('the batch alone, no read after it: drained false, dropped between 2 and 100 (4 runs)', async () => {
    for (const { r, dropped } of await run('only')) {
      expect(dropped, show(r)).toBeGreaterThanOrEqual(2);
      expect(dropped, show(r)).toBeLessThanOrEqual(100);
    }
  });

  it.each([
    ['made in one synchronous run (one batch)', 'batch'],
    ['made one per turn', 'turns'],
  ])(
    '%s, then a read: drained false, dropped between 2 and 101, the read rejects (4 runs)',
    async (_, how) => {
      for (const { r, dropped } of await run(how)) {
        expect(lines(r, 'read '), show(r)).toEqual(['read failed ERR_DEVEXIT_DEVICE_CLOSED']);
        expect(dropped, show(r)).toBeGreaterThanOrEqual(2);
        expect(dropped, show(r)).toBeLessThanOrEqual(101);
      }
    },
  );
});

describe('DEVEXIT_SIGNALS with a busy cpu device (child processes)', () => {
  for (const [signal, status] of [
    ['SIGTERM', 143],
    ['SIGINT', 130],
  ] as const) {
    it(`${signal} with 200 queued launches and a pending read: the read resolves with its result, the queue closes once, the process ends by ${signal} (${status} in a shell; ${testRuns(20)} runs)`, async () => {
      const results = await runMany(testRuns(20), {
        script: fixture('signalDrain.cjs'),
        env: SIGNALS,
        signalOnReady: signal,
        timeoutMs: 60_000,
      });
      for (const r of results) {
        expect(summary(r, signal), show(r)).toEqual({
          code: null,
          signal,
          timedOut: false,
          crashed: false,
          closes: { 'cpu:0/queue': 1 },
          failed: [],
        });
        expect(queueCloses(r)[0], show(r)).toMatchObject({ layer: 'shutdown', drained: true, dropped: 0 });
        // Still queued when the signal came: the drain ran it.
        expect(lines(r, 'at shutdown:'), show(r)).toEqual(['at shutdown: read pending']);
        expect(lines(r, 'read '), show(r)).toEqual(['read 200']);
        expect(lines(r, 'flush '), show(r)).toEqual(['flush ok']);
      }
    });

    it(`${signal}: a shell sees status ${status}`, async () => {
      // A sanitizer job's preload goes to node only, not to the shell.
      const env = childEnv({ ...SIGNALS, DEVEXIT_REPORT: undefined });
      env.NODE_PRELOAD = env.LD_PRELOAD ?? '';
      delete env.LD_PRELOAD;
      const child = spawn(
        '/bin/sh',
        [
          '-c',
          `LD_PRELOAD="$NODE_PRELOAD" "${process.execPath}" "$0" & wait $!; echo "status=$?"`,
          fixture('signalDrain.cjs'),
        ],
        {
          env,
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let out = '';
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (d: string) => {
        out += d;
        const pid = /^pid (\d+)$/m.exec(out);
        if (pid && /^ready$/m.test(out) && !out.includes('sent')) {
          out += 'sent\n';
          process.kill(Number(pid[1]), signal);
        }
      });
      // A hung child is killed (the node process, then the shell), and the test fails below.
      const hung = setTimeout(() => {
        const pid = /^pid (\d+)$/m.exec(out);
        if (pid) process.kill(Number(pid[1]), 'SIGKILL');
        child.kill('SIGKILL');
      }, 30_000);
      const code = await new Promise((resolve) => child.on('close', resolve));
      clearTimeout(hung);
      expect(code).toBe(0);
      expect(out).toMatch(new RegExp(`^status=${status}$`, 'm'));
    });
  }

  it('control: without DEVEXIT_SIGNALS the same child dies by SIGTERM at once: nothing drained, nothing closed (5 runs)', async () => {
    const results = await runMany(testRuns(5), {
      script: fixture('signalDrain.cjs'),
      signalOnReady: 'SIGTERM',
      timeoutMs: 60_000,
    });
    for (const r of results) {
      expect(summary(r, 'SIGTERM'), show(r)).toMatchObject({ signal: 'SIGTERM', closes: {}, crashed: false });
      expect(lines(r, 'read '), show(r)).toEqual([]);
    }
  });

  it('a second signal mid-drain ends the process at once, by that signal: nothing more drains or closes, and nothing crashes (10 runs)', async () => {
    const results = await runMany(testRuns(10), {
      script: fixture('signalDrain.cjs'),
      // 2,000 launches of 16 MiB: seconds of work, so the drain is still going when SIGINT comes.
      env: { ...SIGNALS, FIXTURE_LAUNCHES: '2000' },
      signalOnReady: 'SIGTERM',
      signalOn: [{ line: 'draining', signal: 'SIGINT', delayMs: 20 }],
      timeoutMs: 60_000,
    });
    for (const r of results) {
      expect(summary(r, 'SIGINT'), show(r)).toEqual({
        code: null,
        signal: 'SIGINT',
        timedOut: false,
        crashed: false,
        closes: {},
        failed: [],
      });
      expect(lines(r, 'read '), show(r)).toEqual([]);
    }
  });

  it("with the application's own listener devexit only drains and closes; the application ends the process (exit 7; 10 runs)", async () => {
    const results = await runMany(testRuns(10), {
      script: fixture('signalDrain.cjs'),
      args: ['listener'],
      env: SIGNALS,
      signalOnReady: 'SIGINT',
      timeoutMs: 60_000,
    });
    for (const r of results) {
      expect(summary(r), show(r)).toEqual({
        code: 7,
        signal: null,
        timedOut: false,
        crashed: false,
        closes: { 'cpu:0/queue': 1 },
        failed: [],
      });
      expect(queueCloses(r)[0], show(r)).toMatchObject({ layer: 'shutdown', drained: true });
      expect(lines(r, 'read '), show(r)).toEqual(['read 200']);
      expect(lines(r, 'app '), show(r)).toEqual(['app listener SIGINT', 'app shutdown settled: 1 closes']);
    }
  });

  it(`shutdown() racing process.exit(3): exit 3, no crash, the queue closed exactly once (by one of them; ${testRuns(20)} runs)`, async () => {
    const results: ChildResult[] = [];
    for (const ms of [0, 5, 20, 60]) {
      results.push(
        ...(await runMany(testRuns(5), {
          script: fixture('signalDrain.cjs'),
          args: ['race'],
          env: { FIXTURE_EXIT_MS: String(ms) },
          timeoutMs: 60_000,
        })),
      );
    }
    const layers = new Set<string>();
    for (const r of results) {
      expect(summary(r), show(r)).toEqual({
        code: 3,
        signal: null,
        timedOut: false,
        crashed: false,
        closes: { 'cpu:0/queue': 1 },
        failed: [],
      });
      layers.add(queueCloses(r)[0]!.layer);
    }
    // The exit cuts the drain short: the shutdown's close drops the rest (or the exit closes).
    expect([...layers].every((l) => l === 'shutdown' || l === 'js-exit')).toBe(true);
  });
});

// Every test here runs in child processes, so that the sanitizer jobs can run the whole file
// (the in-process abort test is in abort.test.ts).
describe('async disposal', () => {
  it('await using on a device and on a queue, in an ES module: each closes at the end of its scope, exit has nothing left to close', async () => {
    const source = ts.sys.readFile(fixture('awaitUsing.mts')) ?? '';
    const out = ts.transpileModule(source, {
      compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext },
    });
    // Beside the fixture, so that '@devexit/cpu' resolves as it does for this package.
    const script = fixture(`awaitUsing.${process.pid}.generated.mjs`);
    writeFileSync(script, out.outputText);
    try {
      expect(out.outputText).toContain('__addDisposableResource'); // TypeScript's lowering ran
      const r = await runChild({ script, timeoutMs: 30_000 });
      expect(summary(r), show(r)).toEqual({
        code: 0,
        signal: null,
        timedOut: false,
        crashed: false,
        closes: {},
        failed: [],
      });
      expect(r.stdout.trim().split('\n')).toEqual([
        'device read 5,5,5,5',
        'device closed at the end of its scope: true',
        'queue read 6,6',
        "queue's device closed at the end of its scope: true",
      ]);
    } finally {
      rmSync(script, { force: true });
    }
  });
});

describe('diagnostics (child processes)', () => {
  const channelMessages = (r: ChildResult) =>
    lines(r, 'channel ').map((l) => {
      const [, name, json] = /^channel (\S+) (.*)$/.exec(l)!;
      return { name, message: JSON.parse(json!) } as { name: string; message: Record<string, unknown> };
    });

  it('a subscriber on each channel: register, exit start and end, and each close with its duration', async () => {
    const r = await runChild({ script: fixture('channels.cjs'), timeoutMs: 30_000 });
    expect(summary(r), show(r)).toMatchObject({ code: 0, signal: null, crashed: false });
    const got = channelMessages(r);
    expect(got.map((m) => m.name)).toEqual([
      'devexit:service:register',
      'devexit:exit:start',
      'devexit:service:close',
      'devexit:exit:end',
      // The natural end afterwards: the exit layer runs and finds nothing left.
      'devexit:exit:start',
      'devexit:exit:end',
    ]);
    expect(got[0]!.message).toEqual({
      device: { type: 'cpu', typeId: 1, index: 0 },
      service: 'queue',
      registry: 'native',
    });
    expect(got[1]!.message).toEqual({ layer: 'shutdown' });
    const close = got[2]!.message as unknown as CloseReportEntry;
    expect(close).toMatchObject({
      device: { type: 'cpu', index: 0 },
      service: 'queue',
      layer: 'shutdown',
      outcome: 'ok',
      drained: true,
      dropped: 0,
      pid: expect.any(Number),
    });
    expect(close.ms).toBeGreaterThan(0);
    expect(got[3]!.message).toMatchObject({ layer: 'shutdown', closes: 1, failures: 0 });
    expect(got[3]!.message.ms).toBeGreaterThanOrEqual(close.ms);
    expect(got[4]!.message).toEqual({ layer: 'js-exit', code: 0 });
    expect(got[5]!.message).toMatchObject({ layer: 'js-exit', code: 0, closes: 0, failures: 0 });
    expect(lines(r, 'read ')).toEqual(['read 19']);
  });

  it(`process.exit(3) during shutdown()'s closes: each close still reaches the subscriber once, whichever finished it (${testRuns(16)} runs)`, async () => {
    // The native closes' results reach JS when shutdown()'s promise settles, which an exit never
    // sees: the ones the close engine finished before it had no message (4/20).
    for (const ms of [0, 5, 10, 20]) {
      for (const r of await runMany(testRuns(4), {
        script: fixture('channels.cjs'),
        env: { FIXTURE_EXIT_MS: String(ms) },
        timeoutMs: 30_000,
      })) {
        expect(summary(r), show(r)).toMatchObject({
          code: 3,
          signal: null,
          crashed: false,
          closes: { 'cpu:0/queue': 1 },
        });
        const closes = channelMessages(r).filter((m) => m.name === 'devexit:service:close');
        expect(
          closes.map((m) => `${m.message.service} ${m.message.layer}`),
          show(r),
        ).toEqual([`queue ${queueCloses(r)[0]!.layer}`]);
        // And once in the end messages: the shutdown's, if it got there, else the exit's.
        const ends = channelMessages(r).filter((m) => m.name === 'devexit:exit:end');
        expect(
          ends.map((m) => m.message.closes as number).reduce((a, b) => a + b, 0),
          show(r),
        ).toBe(1);
      }
    }
  });

  it('NODE_DEBUG=devexit prints the register and close lines (and nothing without it)', async () => {
    const r = await runChild({
      script: fixture('channels.cjs'),
      env: { NODE_DEBUG: 'devexit' },
      timeoutMs: 30_000,
    });
    expect(r.code, show(r)).toBe(0);
    const debug = lines(r, 'DEVEXIT ').map((l) => l.replace(/^DEVEXIT \d+: /, ''));
    expect(debug[0]).toBe('register cpu:0/queue (native)');
    expect(debug[1]).toBe('shutdown begins');
    expect(debug[2]).toMatch(/^close cpu:0\/queue ok in \d+\.\d\d ms \(shutdown\), drained$/);
    expect(debug[3]).toMatch(/^shutdown ends in \d+\.\d\d ms: 1 close\(s\), 0 not ok$/);
    const quiet = await runChild({ script: fixture('channels.cjs'), timeoutMs: 30_000 });
    expect(lines(quiet, 'DEVEXIT ')).toEqual([]);
  });
});
