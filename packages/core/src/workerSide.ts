import { runCloses } from './closeRun.js';
import { publishLastSection, sectionsEnded } from './critical.js';
import { markExiting } from './exiting.js';
import { installExitHooks } from './exitLayer.js';
import { settings } from './settings.js';
import { startShutdown } from './shutdown.js';
import { coreState } from './state.js';
import { workerThreads } from './thread.js';
import {
  announce,
  CLOSED,
  channelOf,
  DRAINED,
  type Hello,
  listen,
  onWho,
  ownThreadId,
  parentThread,
  type Report,
  SEEN,
  STOP_EXIT,
  STOP_SHUTDOWN,
  STOP_TERMINATE,
  type StopMessage,
  stopAsync,
  targets,
  tellChildrenParent,
  threadsState,
  W_CODE,
  W_COUNT,
  W_NATIVE,
  W_STATE,
  W_STOP,
  waitKnown,
} from './threads.js';

/**
 * The Worker's side of a stop. When devexit loads in a Worker, the Worker announces its words
 * and listens for wake-ups on its own channel. A stop (the main thread exiting or shutting down,
 * terminate(), or the Worker's own process.exit() while a critical section is open) then runs on
 * the Worker's thread, in order: refuse new sections; stop its own Workers; wait for its open
 * sections; run its closes (or, for a shutdown, its drains and closes); wait for what those
 * started; tell its stopper. All within the stopper's deadline.
 */

type WorkerMessage = StopMessage | { op: 'hurry' };

/** How long a new Worker waits for its creator to read its hello (see waitKnown). */
const KNOWN_WAIT_MS = 250;

let realExit: ((code?: number | string | null) => never) | undefined;

/** Runs the stop asked in this thread's words (once; a shutdown may be followed by an exit). */
function runStop(deadline: number, self?: number): Promise<void> {
  const t = threadsState();
  if (t.stopping) return t.stopping;
  const own = t.own;
  const mode = Atomics.load(own, W_STOP);
  if (mode === 0) return Promise.resolve();
  Atomics.store(own, W_STATE, SEEN);
  Atomics.notify(own, W_STATE);
  publishLastSection();
  const code = self ?? Atomics.load(own, W_CODE);
  const stopping = (async () => {
    if (mode === STOP_SHUTDOWN) {
      const run = startShutdown(true, undefined, {
        nativeCloses: Atomics.load(own, W_NATIVE) === 0,
        deadline,
      });
      const entries = await run.promise.catch(() => []);
      try {
        listen().postMessage({ op: 'report', threadId: ownThreadId(), entries } satisfies Report);
      } catch {
        // Nobody to tell.
      }
      Atomics.store(own, W_STATE, DRAINED);
      Atomics.notify(own, W_STATE);
      // A later stop (the process exiting) finds the closes done, and answers at once; one asked
      // while this shutdown ran (its word replaced ours) is answered now.
      t.stopping = undefined;
      if (Atomics.load(own, W_STOP) !== STOP_SHUTDOWN) void runStop(deadline);
      return;
    }
    markExiting();
    const children = stopAsync(targets(false), mode, code, false, deadline);
    // A section still open at the deadline: its native work is in flight, and closing what it
    // uses could crash under it. The stopper ends the process; nothing more is done here.
    if (!(await sectionsEnded(deadline))) return;
    runCloses({ layer: 'worker-exit', markExiting: true, exitCode: code, nativeCloses: false });
    // What the closes started (a device's destroy settling its pending promises).
    await sectionsEnded(deadline);
    await children;
    Atomics.store(own, W_STATE, CLOSED);
    Atomics.notify(own, W_STATE);
    if (self !== undefined) (realExit as (code?: number) => never).call(process, self);
    // terminate(): the stopper terminates it now; until then it must not end on its own (its
    // exit code is the terminated Worker's, 1, whatever its loop does meanwhile).
    else if (mode === STOP_TERMINATE) setInterval(() => {}, 1 << 30);
  })();
  t.stopping = stopping;
  return stopping;
}

function onMessage(event: unknown): void {
  const msg = (event as { data?: WorkerMessage }).data;
  if (msg?.op === 'stop') void runStop(msg.deadline);
  else if (msg?.op === 'hurry') coreState().shutdown?.hurry();
}

/**
 * process.exit() in a Worker with a critical section open would tear the Worker down under it:
 * the exit is put off until the sections ended and the Worker's closes ran (bounded by the
 * deadline), then happens with the code asked. Meanwhile the call returns: code after it runs
 * on, and a second call changes nothing (the first code wins).
 */
function wrapExit(): void {
  realExit = process.exit as typeof realExit;
  const exit = function exit(code?: number | string | null): never {
    const t = threadsState();
    const asked = code === undefined || code === null ? undefined : Number(code);
    if (t.stopping) return undefined as never;
    if (Atomics.load(t.own, W_COUNT) === 0)
      return (realExit as (code?: number) => never).call(process, asked);
    const final = asked ?? Number(process.exitCode ?? 0);
    Atomics.compareExchange(t.own, W_STOP, 0, STOP_EXIT);
    void runStop(Date.now() + settings().timeoutMs, final);
    return undefined as never;
  };
  process.exit = exit as typeof process.exit;
}

/** In a Worker: announce this thread, listen for stops. Once per realm. */
export function armWorkerSide(): void {
  const wt = workerThreads();
  if (wt.isMainThread) return;
  const t = threadsState();
  if (t.announced) return;
  // DEVEXIT_GUARD=0 / DEVEXIT_LAYERS without js: nothing of devexit's runs at a Worker's end.
  if (!settings().layers.js) return;
  t.announced = true;
  const id = wt.threadId;
  // Read before this thread tells its own children (environment data is this thread's too).
  const parent = parentThread();
  tellChildrenParent(id);
  const mine = new BroadcastChannel(channelOf(id));
  mine.onmessage = onMessage;
  (mine as unknown as { unref?: () => void }).unref?.();
  const hello: Hello = {
    op: 'hello',
    threadId: id,
    parent: parent.id,
    words: t.own.buffer as SharedArrayBuffer,
  };
  onWho(() => announce(hello));
  t.kick = () => {
    if (!t.stopping) void runStop(Date.now() + settings().timeoutMs);
  };
  announce(hello);
  if (parent.listens) waitKnown(t.own, KNOWN_WAIT_MS);
  installExitHooks();
  wrapExit();
}
