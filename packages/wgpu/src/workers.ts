/**
 * Worker exits that Dawn survives. dawn.node aborts when a Worker's environment is torn down with
 * a Dawn promise still pending, and that teardown runs no JS of ours. So every Worker exit must
 * first destroy the Worker's devices and let the event loop settle Dawn's promises:
 * - process.exit() in a Worker: wrapped here (transparent);
 * - worker.terminate(): terminateWorker(worker), or installWorkerGuards() to patch terminate();
 * - the main thread exiting with Workers that own devices: the main thread's 'exit' listener
 *   asks each of them to close and waits (bounded), if @devexit/wgpu is loaded on the main thread.
 */

import { isMainThread, threadId, Worker } from 'node:worker_threads';
import { currentConfig, invalidType } from '@devexit/core';
import { exitState } from './state.js';
import { destroyAllDevices, drainPending, liveDeviceCount, pendingCount } from './tracking.js';

const DIRECTORY = '@devexit/wgpu/workers';
const channelOf = (id: number) => `@devexit/wgpu/worker/${id}`;

// flag[0]: 0 registered, 1 stop request seen, 2 closed (Dawn settled), 3 gone without a close.
const SEEN = 1;
const CLOSED = 2;
const GONE = 3;

type Hello = { op: 'hello'; threadId: number; flag: SharedArrayBuffer } | { op: 'bye'; threadId: number };
type Stop = { op: 'stop'; mode: 'process-exit' | 'terminate'; code: number };

let guardEnabled: () => boolean = () => true;
let closeAll: (explicit: boolean) => void = () => {};

/** Wires in the backend: whether exit layers are on, and how to close this realm's devices. */
export function configureWorkers(options: {
  guard: () => boolean;
  closeAll: (explicit: boolean) => void;
}): void {
  guardEnabled = options.guard;
  closeAll = options.closeAll;
}

function deadlineMs(): number {
  return currentConfig().timeoutMs;
}

// ---- Worker side ---------------------------------------------------------------------------

let workerArmed = false;
let flag: Int32Array | undefined;
let stopping: Promise<void> | undefined;
let realExit: ((code?: number) => never) | undefined;

/** Destroys this realm's devices and waits for Dawn's promises to settle (bounded). */
async function closeAndDrain(explicit: boolean): Promise<number> {
  exitState.exiting = true;
  try {
    closeAll(explicit);
  } finally {
    destroyAllDevices();
  }
  return drainPending(deadlineMs());
}

function reallyExit(code: number): never {
  return (realExit as (code?: number) => never).call(process, code);
}

/** In a Worker: wrap process.exit and listen for stop requests. Called when a device opens. */
export function armWorker(): void {
  if (isMainThread || workerArmed || !guardEnabled()) return;
  workerArmed = true;
  realExit = process.exit;
  const wrapped = function exit(code?: number | string | null): never {
    const c = code === undefined || code === null ? undefined : Number(code);
    if (stopping) return undefined as never; // exit is under way; the first code wins
    if (liveDeviceCount() === 0 && pendingCount() === 0)
      return reallyExit(c ?? Number(process.exitCode ?? 0));
    // The code of this call: what runs on until the real exit cannot change it.
    const final = c ?? Number(process.exitCode ?? 0);
    // Like device.close() before exit: the close is explicit, so no exit-time close is reported.
    stopping = closeAndDrain(true).then(
      () => reallyExit(final),
      () => reallyExit(final),
    );
    return undefined as never;
  };
  process.exit = wrapped as typeof process.exit;

  const sab = new SharedArrayBuffer(4);
  flag = new Int32Array(sab);
  const own = new BroadcastChannel(channelOf(threadId));
  own.unref();
  own.onmessage = (event: unknown) => {
    const msg = (event as { data: Stop }).data;
    if (msg?.op === 'stop') onStop(msg);
  };
  const directory = new BroadcastChannel(DIRECTORY);
  directory.postMessage({ op: 'hello', threadId, flag: sab } satisfies Hello);
  process.on('exit', () => {
    // A normal Worker exit: tell the main thread not to wait for us.
    if (flag && Atomics.load(flag, 0) < CLOSED) {
      Atomics.store(flag, 0, GONE);
      Atomics.notify(flag, 0);
    }
    try {
      directory.postMessage({ op: 'bye', threadId } satisfies Hello);
      directory.close();
    } catch {
      // The channel may already be closed.
    }
  });
  directory.unref();
}

function onStop(msg: Stop): void {
  const f = flag as Int32Array;
  Atomics.store(f, 0, SEEN);
  Atomics.notify(f, 0);
  if (stopping) return;
  // Reported as a 'worker-exit' close: the worker ends because of the stop, not by its own call.
  stopping = closeAndDrain(false).then(
    () => finish(msg.code),
    () => finish(msg.code),
  );
}

function finish(code: number): void {
  const f = flag as Int32Array;
  // Registered last, so it runs after core's close report is written.
  process.on('exit', () => {
    Atomics.store(f, 0, CLOSED);
    Atomics.notify(f, 0);
  });
  reallyExit(code);
}

// ---- Main-thread side ----------------------------------------------------------------------

const known = new Map<number, Int32Array>();
let mainArmed = false;

/** On the main thread: learn which Workers own devices and close them before the process exits. */
export function armMain(): void {
  if (!isMainThread || mainArmed) return;
  mainArmed = true;
  const directory = new BroadcastChannel(DIRECTORY);
  directory.unref();
  directory.onmessage = (event: unknown) => {
    const msg = (event as { data: Hello }).data;
    if (msg?.op === 'hello') known.set(msg.threadId, new Int32Array(msg.flag));
    else if (msg?.op === 'bye') known.delete(msg.threadId);
  };
  process.on('exit', (code) => {
    if (!guardEnabled() || known.size === 0) return;
    stopAllSync(typeof code === 'number' ? code : 0);
  });
}

/** Time a responsive Worker needs to see a request; past it, it is taken as stuck or gone. */
const ACK_MS = 250;

function stopAllSync(code: number): void {
  const end = performance.now() + deadlineMs();
  const waiting: Int32Array[] = [];
  for (const [id, f] of known) {
    if (Atomics.load(f, 0) >= CLOSED) continue;
    const ch = new BroadcastChannel(channelOf(id));
    ch.postMessage({ op: 'stop', mode: 'process-exit', code } satisfies Stop);
    ch.close();
    waiting.push(f);
  }
  known.clear();
  // Blocking is fine here: the process is exiting, and each Worker runs its own event loop.
  for (const f of waiting) {
    const ackEnd = Math.min(end, performance.now() + ACK_MS);
    while (Atomics.load(f, 0) === 0) {
      const left = ackEnd - performance.now();
      if (left <= 0) break;
      Atomics.wait(f, 0, 0, left);
    }
    if (Atomics.load(f, 0) === 0) continue;
    for (let v = Atomics.load(f, 0); v < CLOSED; v = Atomics.load(f, 0)) {
      const left = end - performance.now();
      if (left <= 0) break;
      Atomics.wait(f, 0, v, left);
    }
  }
}

const originalTerminate = Worker.prototype.terminate;

/**
 * Ends a Worker without aborting Dawn: asks it to destroy its devices and settle Dawn's promises,
 * waits for it to exit (bounded by the devexit deadline), then terminates it. Resolves with the
 * exit code. A Worker that never opened a wgpu device is terminated at once.
 */
export async function terminateWorker(worker: Worker): Promise<number> {
  if (!(worker instanceof Worker)) throw invalidType('worker', 'a worker_threads Worker', worker);
  const id = worker.threadId;
  const f = known.get(id);
  if (!guardEnabled() || id < 0 || !f || Atomics.load(f, 0) >= CLOSED) {
    return originalTerminate.call(worker);
  }
  known.delete(id);
  const exited = new Promise<number>((resolve) => worker.once('exit', resolve));
  const ch = new BroadcastChannel(channelOf(id));
  ch.postMessage({ op: 'stop', mode: 'terminate', code: 1 } satisfies Stop);
  ch.close();
  let timer: NodeJS.Timeout | undefined;
  const code = await Promise.race([
    exited,
    new Promise<undefined>((r) => {
      timer = setTimeout(() => r(undefined), deadlineMs() + ACK_MS);
    }),
  ]);
  clearTimeout(timer);
  if (code !== undefined) return code;
  return originalTerminate.call(worker);
}

let guardsInstalled = false;

/** Opt-in: makes every `worker.terminate()` in this realm go through terminateWorker(). */
export function installWorkerGuards(): void {
  if (guardsInstalled) return;
  guardsInstalled = true;
  Worker.prototype.terminate = function terminate(this: Worker) {
    return terminateWorker(this);
  };
}

/** For tests and tools: the Workers this thread knows to own wgpu devices. */
export function knownWorkers(): number[] {
  return [...known.keys()];
}
