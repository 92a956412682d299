import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { type CloseReportEntry, parseReportLines } from '@devexit/core';
import { describe, expect, it } from 'vitest';
import { configure, currentConfig, isExiting, shutdown } from '../src/index.js';

// shutdown() with JS closes only (no @devexit/native), in child processes: a shutdown is final.
// The native drain, the cpu backend and the acceptance runs are in packages/cpu/test/shutdown.test.ts.
const cwd = join(__dirname, '..');
const env = (extra: Record<string, string> = {}) => {
  const e: NodeJS.ProcessEnv = { ...process.env, DEVEXIT_REPORT: 'json', ...extra };
  delete e.NODE_OPTIONS;
  return e;
};
const run = (code: string, extra: Record<string, string> = {}) =>
  spawnSync(process.execPath, ['-e', code], { env: env(extra), encoding: 'utf8', cwd, timeout: 20_000 });

/** Runs `code`, sends `signal` when it prints `ready` (and again `againMs` later, if given). */
function runSignalled(
  code: string,
  signal: NodeJS.Signals,
  extra: Record<string, string> = {},
  againMs?: number,
) {
  return new Promise<{ status: number | null; signal: string | null; stdout: string; stderr: string }>(
    (resolve) => {
      const child = spawn(process.execPath, ['-e', code], { env: env(extra), cwd });
      let stdout = '';
      let stderr = '';
      let sent = false;
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        stdout += d;
        if (!sent && /^ready$/m.test(stdout)) {
          sent = true;
          child.kill(signal);
          if (againMs !== undefined) setTimeout(() => child.kill(signal), againMs);
        }
      });
      child.stderr.setEncoding('utf8').on('data', (d: string) => {
        stderr += d;
      });
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      child.on('close', (status, sig) => {
        clearTimeout(timer);
        resolve({ status, signal: sig, stdout, stderr });
      });
    },
  );
}

const setup = `
  const core = require('./dist/index.js');
  const { writeSync } = require('node:fs');
  const mark = (t) => writeSync(2, t + '\\n');
  const dev = core.deviceId('wgpu', 0);
  // A JS service whose drain finishes its work drainMs after the drain began (never, with
  // drainMs < 0). The work starts with the drain, not before: however late a signal comes on a
  // loaded machine, the work cannot be done before the drain began.
  const service = (name, drainMs, close = () => mark('close ' + name)) => {
    core.closeAtExit(dev, name, close, {
      drain: (signal) => {
        mark('drain ' + name);
        signal.addEventListener('abort', () => mark('drain aborted ' + name));
        const work = drainMs < 0 ? new Promise(() => {}) : new Promise((r) => setTimeout(r, drainMs));
        return work.then(() => mark('work done ' + name));
      },
    });
  };
`;
const marks = (stderr: string) =>
  stderr.split('\n').filter((l) => /^(close|drain|work|result|exiting|same|rejected|logger|channel)/.test(l));
const report = (stderr: string) =>
  parseReportLines(stderr).map((e: CloseReportEntry) => ({
    service: e.service,
    layer: e.layer,
    outcome: e.outcome,
    drained: e.drained,
  }));

describe('shutdown() with JS closes (child processes)', () => {
  it('drains, then closes; isExiting() turns true at once; a second call gets the same promise; later registrations are refused', () => {
    const r = run(`${setup}
      service('a', 50); service('b', 10);
      const p = core.shutdown();
      mark('exiting ' + core.isExiting());
      mark('same ' + (core.shutdown() === p));
      p.then((entries) => {
        mark('result ' + entries.map((e) => e.service + ':' + e.layer + ':' + e.drained).join(','));
        try { core.closeAtExit(dev, 'late', () => {}); } catch (e) { mark('rejected ' + e.code); }
      });`);
    expect(r.status, r.stderr).toBe(0);
    expect(marks(r.stderr)).toEqual([
      'drain a',
      'drain b',
      'exiting true',
      'same true',
      'work done b',
      'work done a',
      'close b',
      'close a',
      'result b:shutdown:true,a:shutdown:true',
      'rejected ERR_DEVEXIT_EXITING',
    ]);
    // Nothing left for the exit layer.
    expect(report(r.stderr)).toEqual([
      { service: 'b', layer: 'shutdown', outcome: 'ok', drained: true },
      { service: 'a', layer: 'shutdown', outcome: 'ok', drained: true },
    ]);
  });

  it('a drain past the deadline: the close runs at the deadline and the report says drained: false', () => {
    const t0 = Date.now();
    const r = run(
      `${setup} service('slow', -1); service('quick', 5); core.shutdown().then(() => process.exit(0));`,
      {
        DEVEXIT_TIMEOUT_MS: '300',
      },
    );
    expect(r.status, r.stderr).toBe(0);
    expect(Date.now() - t0).toBeLessThan(10_000);
    // Services of one device close last-registered-first.
    expect(report(r.stderr)).toEqual([
      { service: 'quick', layer: 'shutdown', outcome: 'ok', drained: true },
      { service: 'slow', layer: 'shutdown', outcome: 'ok', drained: false },
    ]);
    expect(marks(r.stderr)).toContain('drain aborted slow');
  });

  it('drain: false closes at once, calling no drain', () => {
    const r = run(
      `${setup} service('a', 1000); core.shutdown({ drain: false }).then(() => process.exit(0));`,
    );
    expect(r.status, r.stderr).toBe(0);
    expect(marks(r.stderr)).toEqual(['close a']);
    expect(report(r.stderr)).toEqual([{ service: 'a', layer: 'shutdown', outcome: 'ok', drained: false }]);
  });

  it('an AbortSignal: the call rejects with an AbortError, the drain is cut short, the closes still run', () => {
    const r = run(`${setup} service('a', -1);
      const ac = new AbortController();
      core.shutdown({ signal: ac.signal }).catch((e) => mark('rejected ' + e.name + ' ' + e.code + ' ' + e.cause));
      setTimeout(() => ac.abort('enough'), 50);
      core.shutdown().then((entries) => { mark('result ' + entries.length); process.exit(0); });`);
    expect(r.status, r.stderr).toBe(0);
    expect(marks(r.stderr)).toEqual([
      'drain a',
      'drain aborted a',
      'rejected AbortError ABORT_ERR enough',
      'close a',
      'result 1',
    ]);
  });

  it('bad options reject with a typed error and change nothing', async () => {
    await expect(shutdown({ drain: 'yes' } as never)).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE' });
    await expect(shutdown({ now: true } as never)).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' });
    await expect(shutdown({ signal: {} as never })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE' });
    await expect(shutdown({ signal: AbortSignal.abort() })).rejects.toMatchObject({ name: 'AbortError' });
    expect(isExiting()).toBe(false);
    const before = currentConfig();
    expect(() => configure({ signals: ['SIGKILL'] as never })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }),
    );
    expect(() => configure({ signals: 'SIGTERM' as never })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }),
    );
    expect(() => configure({ logger: 'stderr' as never })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }),
    );
    expect(currentConfig()).toEqual(before);
    expect(process.listenerCount('SIGTERM')).toBe(0);
  });

  it('configure() reads each option once: a lying iterator or getter cannot make devexit listen to another signal or apply a value it did not check', () => {
    const r = run(`
      const core = require('./dist/index.js');
      const out = {};
      // An array whose own iterator yields something else: the indexes are what is read.
      const lying = ['SIGTERM'];
      lying[Symbol.iterator] = function* () { yield 'SIGUSR1'; };
      core.configure({ signals: lying });
      out.listening = { SIGTERM: process.listenerCount('SIGTERM'), SIGUSR1: process.listenerCount('SIGUSR1') };
      // An element that answers 'SIGINT' once, then 'SIGKILL' (uv_signal_start would refuse it).
      let elementReads = 0;
      const flip = [];
      Object.defineProperty(flip, 0, { get() { return ++elementReads === 1 ? 'SIGINT' : 'SIGKILL'; }, enumerable: true });
      core.configure({ signals: flip });
      out.flip = { reads: elementReads, signals: core.currentConfig().signals, SIGINT: process.listenerCount('SIGINT') };
      // A getter that answers 500 once, then nonsense.
      let reads = 0;
      core.configure({ get timeoutMs() { return ++reads === 1 ? 500 : 'nonsense'; } });
      out.timeout = { reads, timeoutMs: core.currentConfig().timeoutMs };
      console.log(JSON.stringify(out));`);
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      listening: { SIGTERM: 1, SIGUSR1: 0 },
      flip: { reads: 1, signals: ['SIGINT'], SIGINT: 1 },
      timeout: { reads: 1, timeoutMs: 500 },
    });
  });

  it('configure({ signals }): SIGTERM drains the JS services, closes them, and the process ends by SIGTERM', async () => {
    const r = await runSignalled(
      `${setup} core.configure({ signals: ['SIGTERM'] }); service('a', 100); setInterval(() => {}, 1000); console.log('ready');`,
      'SIGTERM',
    );
    expect({ status: r.status, signal: r.signal }, r.stderr).toEqual({ status: null, signal: 'SIGTERM' });
    expect(marks(r.stderr)).toEqual(['drain a', 'work done a', 'close a']);
    expect(report(r.stderr)).toEqual([{ service: 'a', layer: 'shutdown', outcome: 'ok', drained: true }]);
  });

  it.each([
    [
      'an async loop (the refusal rejects, unhandled)',
      `(async () => { for (;;) await core.critical(() => new Promise((r) => setTimeout(r, 5))); })();`,
    ],
    ['a timer (the refusal is thrown)', `setInterval(() => core.critical(() => 0), 5);`],
  ])(
    'SIGTERM while %s keeps submitting work without testing isExiting(): ERR_DEVEXIT_EXITING does not change the end, by SIGTERM (3 runs)',
    async (_name, loop) => {
      for (let i = 0; i < 3; i++) {
        const r = await runSignalled(
          `${setup} core.configure({ signals: ['SIGTERM'] }); service('a', 100); ${loop} console.log('ready');`,
          'SIGTERM',
        );
        expect(
          { status: r.status, signal: r.signal, refusalShown: /ERR_DEVEXIT_EXITING/.test(r.stderr) },
          r.stderr,
        ).toEqual({
          status: null,
          signal: 'SIGTERM',
          refusalShown: false,
        });
        expect(marks(r.stderr)).toEqual(['drain a', 'work done a', 'close a']);
      }
    },
  );

  it('SIGTERM, and another error thrown during the drain: it ends the process as without devexit (exit 1, its stack)', async () => {
    const r = await runSignalled(
      `${setup} core.configure({ signals: ['SIGTERM'] }); service('a', 300);
       core.closeAtExit(dev, 'b', () => mark('close b'), { drain: () => { setTimeout(() => { throw new Error('own bug (expected)'); }, 20); } });
       setInterval(() => {}, 1000); console.log('ready');`,
      'SIGTERM',
    );
    expect(
      { status: r.status, signal: r.signal, shown: /Error: own bug \(expected\)/.test(r.stderr) },
      r.stderr,
    ).toEqual({
      status: 1,
      signal: null,
      shown: true,
    });
    expect(marks(r.stderr)).toContain('close a');
  });

  it.each([
    [
      'v4',
      'signal-exit',
      `require('signal-exit').onExit((code, sig) => mark('onExit ' + code + ' ' + sig));`,
    ],
    ['v3', 'signal-exit-3', `require('signal-exit-3')((code, sig) => mark('onExit ' + code + ' ' + sig));`],
  ])(
    'signal-exit %s loaded (as ora, execa and others load it): SIGTERM drains, closes, then signal-exit runs its handlers and the process ends by SIGTERM (3 runs)',
    async (_v, _pkg, load) => {
      // signal-exit ends the process only where its listeners are the signal's only ones: counted
      // as the application's, neither it nor devexit ended it (hung until SIGKILL, 12/12).
      for (const order of ['before', 'after']) {
        const code =
          order === 'before'
            ? `${setup} ${load} core.configure({ signals: ['SIGTERM'] });`
            : `${setup} core.configure({ signals: ['SIGTERM'] }); ${load}`;
        const r = await runSignalled(
          `${code} service('a', 100); setInterval(() => {}, 1000); console.log('ready');`,
          'SIGTERM',
        );
        expect({ order, status: r.status, signal: r.signal }, r.stderr).toEqual({
          order,
          status: null,
          signal: 'SIGTERM',
        });
        expect(
          marks(r.stderr).filter((m) => !m.startsWith('onExit')),
          r.stderr,
        ).toEqual(['drain a', 'work done a', 'close a']);
        expect(r.stderr).toMatch(/^onExit null SIGTERM$/m);
      }
    },
  );

  it('an application handler that cleans up after shutdown() and raises the signal again: the process ends by it, idle or not (3 runs)', async () => {
    // As terminus does: the server (here a timer) is closed in the cleanup, then the signal is
    // raised again. devexit's listener caught it, and the idle process ended with code 0.
    for (const server of ['closed', 'kept']) {
      for (let i = 0; i < 3; i++) {
        const r = await runSignalled(
          `${setup} core.configure({ signals: ['SIGTERM'] }); service('a', 100);
           const server = setInterval(() => {}, 1000);
           process.once('SIGTERM', async (sig) => {
             await core.shutdown();
             ${server === 'closed' ? 'clearInterval(server);' : ''}
             await new Promise((r) => setTimeout(r, 50));
             mark('app done');
             process.kill(process.pid, sig);
           });
           console.log('ready');`,
          'SIGTERM',
        );
        expect({ server, status: r.status, signal: r.signal }, r.stderr).toEqual({
          server,
          status: null,
          signal: 'SIGTERM',
        });
        expect(marks(r.stderr)).toEqual(['drain a', 'work done a', 'close a']);
        expect(r.stderr).toMatch(/^app done$/m);
      }
    }
  });

  it("an application that handles SIGTERM itself while a loop keeps submitting work: the refusal is let go, the application's cleanup ends the process (3 runs)", async () => {
    for (let i = 0; i < 3; i++) {
      // The uncaught refusal ended it with exit 1 and a stack, the cleanup cut short.
      const r = await runSignalled(
        `${setup} core.configure({ signals: ['SIGTERM'] }); service('a', 100);
         process.on('SIGTERM', async () => { await new Promise((r) => setTimeout(r, 300)); mark('app done'); process.exit(0); });
         (async () => { for (;;) await core.critical(() => new Promise((r) => setTimeout(r, 5))); })();
         console.log('ready');`,
        'SIGTERM',
      );
      expect(
        { status: r.status, signal: r.signal, refusalShown: /ERR_DEVEXIT_EXITING/.test(r.stderr) },
        r.stderr,
      ).toEqual({ status: 0, signal: null, refusalShown: false });
      expect(marks(r.stderr)).toEqual(['drain a', 'work done a', 'close a']);
      expect(r.stderr).toMatch(/^app done$/m);
    }
  });

  it.each([
    [
      'an async loop',
      `(async () => { for (;;) await core.critical(() => new Promise((r) => setTimeout(r, 5))); })();`,
    ],
    ['a timer', `setInterval(() => core.critical(() => 0), 5);`],
  ])(
    "error monitors listen (as Sentry's: report, then exit 1 where it is the only uncaughtException listener): SIGTERM while %s keeps submitting work: no listener sees the refusal, the process ends by SIGTERM; an error of the application's still reaches them (3 runs)",
    async (_name, loop) => {
      // Where any uncaughtException listener was on, the refusal reached it: exit 1 (6/6).
      const monitor = `
        process.on('uncaughtExceptionMonitor', (e) => mark('seen monitor ' + e.message));
        process.on('unhandledRejection', (e) => mark('seen rejection ' + e.message));
        process.on('uncaughtException', (e) => { mark('seen uncaught ' + e.message); process.exit(1); });`;
      const seen = (stderr: string) => stderr.split('\n').filter((l) => l.startsWith('seen '));
      for (let i = 0; i < 3; i++) {
        const r = await runSignalled(
          `${setup} core.configure({ signals: ['SIGTERM'] }); service('a', 100); ${monitor} ${loop} console.log('ready');`,
          'SIGTERM',
        );
        expect({ status: r.status, signal: r.signal, seen: seen(r.stderr) }, r.stderr).toEqual({
          status: null,
          signal: 'SIGTERM',
          seen: [],
        });
        expect(marks(r.stderr)).toEqual(['drain a', 'work done a', 'close a']);
      }
      // Not every error: the application's own, thrown and rejected during the drain, reach them.
      const r = await runSignalled(
        `${setup} core.configure({ signals: ['SIGTERM'] }); service('a', 300); ${monitor}
         core.closeAtExit(dev, 'b', () => mark('close b'), { drain: () => {
           Promise.reject(new Error('own rejection'));
           setTimeout(() => { throw new Error('own bug'); }, 50);
         } });
         ${loop} console.log('ready');`,
        'SIGTERM',
      );
      expect({ status: r.status, signal: r.signal, seen: seen(r.stderr) }, r.stderr).toEqual({
        status: 1,
        signal: null,
        seen: ['seen rejection own rejection', 'seen monitor own bug', 'seen uncaught own bug'],
      });
    },
  );

  it('the same SIGTERM delivered twice at once (a Ctrl-C from the terminal and from a wrapper passing it on): drained as for one, ended by SIGTERM (3 runs)', async () => {
    for (let i = 0; i < 3; i++) {
      const r = await runSignalled(
        `${setup} core.configure({ signals: ['SIGTERM'] }); service('a', 200); setInterval(() => {}, 1000); console.log('ready');`,
        'SIGTERM',
        {},
        5,
      );
      expect({ status: r.status, signal: r.signal }, r.stderr).toEqual({ status: null, signal: 'SIGTERM' });
      // As a second signal it cut the drain short: no 'work done a'.
      expect(marks(r.stderr)).toEqual(['drain a', 'work done a', 'close a']);
    }
  });

  it('a second SIGTERM later during the drain still cuts it short and ends the process (the control)', async () => {
    const r = await runSignalled(
      `${setup} core.configure({ signals: ['SIGTERM'] }); service('a', 5000); setInterval(() => {}, 1000); console.log('ready');`,
      'SIGTERM',
      {},
      600,
    );
    expect({ status: r.status, signal: r.signal }, r.stderr).toEqual({ status: null, signal: 'SIGTERM' });
    expect(marks(r.stderr)).not.toContain('work done a');
  });

  // Its handler awaits shutdown(), then exits 7; a second SIGTERM comes during the drain. With
  // process.on the second is the application's (it ignores it): that one skips the rest of the
  // drain, the closes run, the handler ends the process. A process.once listener is gone after the
  // first: the second finds none of the application's and ends the process at once by SIGTERM, as
  // without devexit (a sweep read the README's "a second signal is the application's too" for
  // `once` listeners as well).
  it.each([
    [
      'process.on, ignoring a second one',
      `let n = 0; process.on('SIGTERM', async () => { if (++n > 1) return mark('result second ignored');`,
      { status: 7, signal: null },
      ['drain a', 'drain aborted a', 'result second ignored', 'close a', 'result drained false'],
    ],
    [
      'process.once',
      `process.once('SIGTERM', async () => {`,
      { status: null, signal: 'SIGTERM' },
      ['drain a'],
    ],
  ])(
    'the application listens to SIGTERM (%s); a second SIGTERM during the drain (3 runs)',
    async (_, listen, end, expected) => {
      for (let i = 0; i < 3; i++) {
        const r = await runSignalled(
          `${setup} core.configure({ signals: ['SIGTERM'] }); service('a', 5000); setInterval(() => {}, 1000);
         ${listen}
           const entries = await core.shutdown();
           mark('result drained ' + entries.map((e) => e.drained).join());
           process.exit(7);
         });
         console.log('ready');`,
          'SIGTERM',
          {},
          600,
        );
        expect({ status: r.status, signal: r.signal }, r.stderr).toEqual(end);
        expect(marks(r.stderr), r.stderr).toEqual(expected);
      }
    },
  );

  it('configure({ signals: [] }) removes the listeners: SIGTERM ends the process at once, nothing closed (the control)', async () => {
    const r = await runSignalled(
      `${setup} core.configure({ signals: ['SIGTERM'] }); core.configure({ signals: [] }); service('a', 100);
       setInterval(() => {}, 1000); console.log('ready');`,
      'SIGTERM',
      { DEVEXIT_SIGNALS: 'SIGTERM' },
    );
    expect({ status: r.status, signal: r.signal }).toEqual({ status: null, signal: 'SIGTERM' });
    expect(marks(r.stderr)).toEqual([]);
  });
});

describe('warnings and diagnostics with JS closes (child processes)', () => {
  it('configure({ logger }) gets every warning: a setting ignored, a failing close (explicit and at exit); none reaches stderr', () => {
    const r = run(
      `${setup}
      core.configure({ logger: (w) => mark('logger ' + w.name + ' ' + w.code + ': ' + w.message) });
      core.closeAtExit(dev, 'bad', () => { throw new Error('no luck'); });
      core.closeServices({ final: false });
      core.closeAtExit(core.deviceId('wgpu', 1), 'worse', () => { throw new Error('at exit'); });`,
      { DEVEXIT_ON_TIMEOUT: 'sometimes' },
    );
    expect(r.status, r.stderr).toBe(0);
    expect(marks(r.stderr)).toEqual([
      'logger DevexitWarning DEVEXIT_SETTING: devexit: ignoring DEVEXIT_ON_TIMEOUT="sometimes": expected exit or warn',
      'logger ServiceCloseError ERR_DEVEXIT_SERVICE_CLOSE: devexit: closing wgpu:0/bad failed: no luck',
      'logger DevexitWarning DEVEXIT_CLOSE_FAILED: devexit: close of wgpu:1/worse failed: at exit',
    ]);
    expect(r.stderr).not.toMatch(/Warning:|^devexit: close of/m);
  });

  it('without a logger the same warnings go to process warnings, and at exit straight to stderr', () => {
    const r = run(
      `${setup}
      core.closeAtExit(dev, 'bad', () => { throw new Error('no luck'); });
      core.closeServices({ final: false });
      core.closeAtExit(core.deviceId('wgpu', 1), 'worse', () => { throw new Error('at exit'); });`,
      { DEVEXIT_ON_TIMEOUT: 'sometimes' },
    );
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/DevexitWarning: devexit: ignoring DEVEXIT_ON_TIMEOUT="sometimes"/);
    expect(r.stderr).toMatch(/ServiceCloseError: devexit: closing wgpu:0\/bad failed: no luck/);
    expect(r.stderr).toMatch(/^devexit: close of wgpu:1\/worse failed: at exit$/m);
  });

  it('the channels and NODE_DEBUG=devexit for JS closes: register, exit start, close (with ms), exit end', () => {
    const r = run(
      `${setup}
      const dc = require('node:diagnostics_channel');
      for (const name of Object.values(core.CHANNELS)) dc.subscribe(name, (m) => mark('channel ' + name + ' ' + JSON.stringify(m)));
      service('a', 0);
      process.exitCode = 4;`,
      { NODE_DEBUG: 'devexit' },
    );
    expect(r.status, r.stderr).toBe(4);
    const channels = marks(r.stderr).filter((l) => l.startsWith('channel'));
    expect(channels.map((l) => l.split(' ')[1])).toEqual([
      'devexit:service:register',
      'devexit:exit:start',
      'devexit:service:close',
      'devexit:exit:end',
    ]);
    expect(JSON.parse(channels[0]!.split(' ').slice(2).join(' '))).toEqual({
      device: { type: 'wgpu', typeId: 4, index: 0 },
      service: 'a',
      registry: 'js',
    });
    const close = JSON.parse(channels[2]!.split(' ').slice(2).join(' '));
    expect(close).toMatchObject({ service: 'a', layer: 'js-exit', outcome: 'ok', ms: expect.any(Number) });
    expect(JSON.parse(channels[3]!.split(' ').slice(2).join(' '))).toMatchObject({
      layer: 'js-exit',
      code: 4,
      closes: 1,
      failures: 0,
      ms: expect.any(Number),
    });
    const debug = r.stderr.split('\n').filter((l) => l.startsWith('DEVEXIT '));
    expect(debug.map((l) => l.replace(/^DEVEXIT \d+: /, '').replace(/[\d.]+ ms/, 'N ms'))).toEqual([
      'register wgpu:0/a (js)',
      'js-exit begins (code 4)',
      'close wgpu:0/a ok in N ms (js-exit)',
      'js-exit ends in N ms: 1 close(s), 0 not ok (code 4)',
    ]);
  });

  it('require(@devexit/core) loads neither node:diagnostics_channel nor anything else new before use', () => {
    const r = run(`
      const before = new Set(process.moduleLoadList);
      require('./dist/index.js');
      const added = process.moduleLoadList.filter((m) => !before.has(m) && m.startsWith('NativeModule'));
      console.log(JSON.stringify(added));`);
    expect(r.status, r.stderr).toBe(0);
    const added = JSON.parse(r.stdout) as string[];
    expect(
      added.filter((m) => /diagnostics_channel|worker_threads|NativeModule util$|NativeModule os$/.test(m)),
    ).toEqual([]);
  });
});
