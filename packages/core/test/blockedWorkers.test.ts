import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// A Worker blocked in Atomics.wait (a worker pool's idle Worker) runs no JS: devexit wraps
// Atomics.wait in Workers that load core (workerSide.ts, wrapWait). Each case in a child process,
// repeated; a hung child is killed by the timeout (status null).

const RUNS = Math.min(5, Number(process.env.DEVEXIT_TEST_RUNS ?? 5) || 5);

const run = (code: string, env: Record<string, string> = {}) => {
  const start = Date.now();
  const r = spawnSync(process.execPath, ['-e', code], {
    env: { ...process.env, DEVEXIT_REPORT: 'json', DEVEXIT_TIMEOUT_MS: '6000', ...env },
    encoding: 'utf8',
    cwd: join(__dirname, '..'),
    timeout: 30_000,
  });
  return { ...r, ms: Date.now() - start };
};

/** The JSON report entries a child printed. */
const entries = (stderr: string) =>
  stderr
    .split('\n')
    .filter((l) => l.startsWith('devexit:report '))
    .map(
      (l) =>
        JSON.parse(l.slice('devexit:report '.length)) as {
          device: { type: string };
          service: string;
          outcome: string;
        },
    );

// The Worker's body: a close registered, then `then` (its own code), sent as eval'd source.
const worker = (then: string) =>
  JSON.stringify(`
    const core = require('./dist/index.js');
    const { parentPort, threadId } = require('node:worker_threads');
    const { writeSync } = require('node:fs');
    core.closeAtExit(core.deviceId('pool', threadId), 'session', () => writeSync(1, 'close ran\\n'));
    const idle = new Int32Array(new SharedArrayBuffer(4));
    ${then}
  `);

/** Main: a Worker running `body` (see worker()), process.exit(0) `afterMs` after its first message. */
const exitAfter = (body: string, afterMs: number) =>
  run(`
    const { Worker } = require('node:worker_threads');
    require('./dist/index.js');
    const w = new Worker(${worker(body)}, { eval: true });
    w.on('message', () => setTimeout(() => process.exit(0), ${afterMs}));
  `);

/** How a run ended, with whether it ended well before the 6 s deadline. */
const ending = (r: ReturnType<typeof run>) => ({
  status: r.status,
  signal: r.signal,
  fast: r.ms < 3000,
  stdout: r.stdout,
});

describe('Workers blocked in Atomics.wait', () => {
  it('Atomics.wait keeps its answers in a Worker (wrapped there, not in main)', () => {
    const r = run(`
      const { Worker } = require('node:worker_threads');
      require('./dist/index.js');
      const mark = Symbol.for('@devexit/core/Atomics.wait');
      const shared = new Int32Array(new SharedArrayBuffer(8));
      const w = new Worker(${JSON.stringify(`
        const { parentPort, workerData } = require('node:worker_threads');
        require('./dist/index.js');
        const a = workerData;
        const out = [typeof Atomics.wait[Symbol.for('@devexit/core/Atomics.wait')]];
        out.push(Atomics.wait(a, 0, 1, 0), Atomics.wait(a, 0, 0, 20));
        Atomics.store(a, 1, 1);
        Atomics.notify(a, 1);
        out.push(Atomics.wait(a, 0, 0, 10000));
        parentPort.postMessage(out.join(' '));
      `)}, { eval: true, workerData: shared });
      w.on('message', (m) => { process.stdout.write(m + ' main:' + typeof Atomics.wait[mark] + '\\n'); });
      // Wakes the Worker's third wait once it is in it.
      const waitReady = () => { if (Atomics.load(shared, 1) === 1) { setTimeout(() => { Atomics.store(shared, 0, 0); Atomics.notify(shared, 0); }, 50); } else setTimeout(waitReady, 5); };
      waitReady();
    `);
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toBe('function not-equal timed-out ok main:undefined');
  });

  it(`main exits while its Worker is blocked: not waited for until the deadline, its closes reported as not run (${RUNS} runs)`, () => {
    for (let i = 0; i < RUNS; i++) {
      const r = exitAfter(
        "parentPort.postMessage('ready'); setTimeout(() => Atomics.wait(idle, 0, 0), 10);",
        50,
      );
      expect(ending(r)).toEqual({ status: 0, signal: null, fast: true, stdout: '' });
      expect(entries(r.stderr)).toEqual([
        expect.objectContaining({
          device: expect.objectContaining({ type: 'thread' }),
          service: 'closes',
          outcome: 'timeout',
        }),
      ]);
      expect(r.stderr).toMatch(/closes not run: Worker \d+ blocked in Atomics\.wait/);
    }
  });

  it(`a stop asked during a critical section runs the closes when it ends, before the Worker blocks (${RUNS} runs)`, () => {
    for (let i = 0; i < RUNS; i++) {
      const r = exitAfter(
        `core.critical(() => { parentPort.postMessage('in'); return new Promise((r) => setTimeout(r, 300)); })
           .then(() => Atomics.wait(idle, 0, 0));`,
        20,
      );
      expect(ending(r)).toEqual({ status: 0, signal: null, fast: true, stdout: 'close ran\n' });
      expect(r.stderr).not.toMatch(/closes not run/);
    }
  });

  it(`a Worker that waits on a lock for less than the grace still answers (${RUNS} runs)`, () => {
    for (let i = 0; i < RUNS; i++) {
      // 20 ms waits, one after another: never ~100 ms in one.
      const r = exitAfter(
        `parentPort.postMessage('ready');
         const loop = () => { Atomics.wait(idle, 0, 0, 20); setImmediate(loop); };
         loop();`,
        50,
      );
      expect(ending(r)).toEqual({ status: 0, signal: null, fast: true, stdout: 'close ran\n' });
    }
  });
});
