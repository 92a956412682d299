import { runCloses } from './closeRun.js';
import { publishLastSection, sectionsEnded } from './critical.js';
import { markExiting } from './exiting.js';
import { installExitHooks } from './exitLayer.js';
import { settings } from './settings.js';
import { startShutdown } from './shutdown.js';
import { coreState, type ThreadsState } from './state.js';
import { stopAsync } from './stopThreads.js';
import { workerThreads } from './thread.js';
import {
  announce,
  atomicsWait,
  BLOCKED_GIVEN_UP,
  CLOSED,
  channelOf,
  DRAINED,
  type Hello,
  listen,
  ORIGINAL_WAIT,
  onWho,
  ownThreadId,
  parentThread,
  putStop,
  type Report,
  SEEN,
  STOP_EXIT,
  STOP_SHUTDOWN,
  STOP_TERMINATE,
  type StopMessage,
  targets,
  tellChildrenParent,
  threadsState,
  W_BLOCKED,
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

/**
 * Moves the exit or terminate stop in progress on as far as it can go now, without waiting: once
 * no section is open, the closes run; once those started no section and this thread's own Workers
 * answered, the stopper is told. Called at once, after each wait, and at the end of the last open
 * section (critical.ts, through `kick`): a thread whose event loop does not come back (blocked in
 * Atomics.wait) has still answered.
 */
let advance: (() => void) | undefined;

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
        byStopper: true,
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
      if (Atomics.load(own, W_STOP) !== STOP_SHUTDOWN) {
        // An exit asked meanwhile: the stopper's, or this Worker's own (which keeps its code).
        const asked = t.exitAsked;
        t.exitAsked = undefined;
        void runStop(asked === undefined ? deadline : Date.now() + settings().timeoutMs, asked);
      }
      return;
    }
    markExiting();
    const kids = targets(false);
    let kidsDone = kids.length === 0;
    let closed = false;
    let gaveUp = false;
    const tell = () => {
      Atomics.store(own, W_STATE, CLOSED);
      Atomics.notify(own, W_STATE);
    };
    advance = () => {
      if (gaveUp || Atomics.load(own, W_COUNT) !== 0) return;
      // Its stopper stopped waiting for this thread (blocked in Atomics.wait): the process is
      // ending under it, and a close started now could be cut in the middle of native work.
      if (Atomics.load(own, W_BLOCKED) === BLOCKED_GIVEN_UP) return;
      if (!closed) {
        closed = true;
        runCloses({ layer: 'worker-exit', markExiting: true, exitCode: code, nativeCloses: false });
      }
      // What the closes started (a device's destroy settling its pending promises) ends first.
      if (kidsDone && Atomics.load(own, W_COUNT) === 0 && Atomics.load(own, W_STATE) < CLOSED) tell();
    };
    const children = stopAsync(kids, mode, code, false, deadline).then(() => {
      kidsDone = true;
    });
    // Nothing open: the closes run now, in this turn (the code that runs next may block the loop).
    advance();
    // A section still open at the deadline: its native work is in flight, and closing what it
    // uses could crash under it. The stopper ends the process; nothing more is done here.
    if (!(await sectionsEnded(deadline))) {
      gaveUp = true;
      return;
    }
    advance();
    await sectionsEnded(deadline);
    await children;
    tell();
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
  // `...args`: Node's exit() tells a call without an argument (process.exitCode stands: an
  // uncaught error's 1, the application's own) from one with `undefined` (code 0).
  const exit = function exit(...args: [code?: number | string | null]): never {
    const code = args[0];
    const t = threadsState();
    const asked = code === undefined || code === null ? undefined : Number(code);
    const shutdown = t.stopping !== undefined && Atomics.load(t.own, W_STOP) === STOP_SHUTDOWN;
    // An exit or terminate stop in progress ends the Worker already (the first code wins).
    if (t.stopping && !shutdown) return undefined as never;
    // No section open: the exit happens now, as without devexit (during a shutdown's stop too:
    // its exit layer runs the closes the shutdown had not run yet, and tells the stopper).
    if (Atomics.load(t.own, W_COUNT) === 0)
      return (realExit as (...a: typeof args) => never).apply(process, args);
    const final = asked ?? Number(process.exitCode ?? 0);
    if (shutdown) {
      // Put off until the shutdown's part ended (runStop runs the exit after it, with this code).
      if (t.exitAsked === undefined) t.exitAsked = final;
      putStop(t.own, STOP_EXIT);
      return undefined as never;
    }
    // A shutdown's word left from a shutdown that ended, or from this Worker's own shutdown(), is
    // replaced (as a stopper's exit does), else runStop would take the exit for a shutdown.
    putStop(t.own, STOP_EXIT);
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
    if (t.stopping) return advance?.();
    const state = Atomics.load(t.own, W_STATE);
    // Answered already (a shutdown that drained starts again only for another stop).
    if (state === CLOSED || (state === DRAINED && Atomics.load(t.own, W_STOP) === STOP_SHUTDOWN)) return;
    void runStop(Date.now() + settings().timeoutMs);
  };
  announce(hello);
  if (parent.listens) waitKnown(t.own, KNOWN_WAIT_MS);
  installExitHooks();
  wrapExit();
  wrapWait(t);
}

/**
 * A Worker blocked in Atomics.wait runs no JS: a stop's message waits in its queue, and its
 * stopper would wait for it until the deadline (an idle piscina or tinypool Worker, with their
 * default settings, blocks so until its next task). In a Worker, Atomics.wait is wrapped: a stop
 * already asked of the thread runs first (with no section open: its closes run); a wait outside
 * any section says so in the thread's words (W_BLOCKED), and its stopper stops waiting for it if
 * it stays blocked (stopThreads.ts, blockedIdle). What the wait does and returns is the runtime's.
 */
function wrapWait(t: ThreadsState): void {
  const original = atomicsWait();
  if (Atomics.wait !== original) return; // wrapped by another copy of core in this realm
  const own = t.own;
  let count = 0;
  const call = (args: Parameters<typeof Atomics.wait>) => original.apply(Atomics, args);
  const wait = function wait(...args: Parameters<typeof Atomics.wait>): ReturnType<typeof Atomics.wait> {
    // Inside a section (this thread's native work in flight): not idle, nothing said.
    if (Atomics.load(own, W_COUNT) !== 0) return call(args);
    count = count >= 0x3fffffff ? 1 : count + 1;
    const mine = count;
    // Given up on by its stopper: stays so (nothing of the stop runs here any more).
    if (Atomics.compareExchange(own, W_BLOCKED, 0, mine) !== 0) return call(args);
    if (Atomics.load(own, W_STOP) !== 0) {
      if (Atomics.compareExchange(own, W_BLOCKED, mine, 0) !== mine) return call(args);
      t.kick?.();
      if (Atomics.compareExchange(own, W_BLOCKED, 0, mine) !== 0) return call(args);
    }
    try {
      return call(args);
    } finally {
      Atomics.compareExchange(own, W_BLOCKED, mine, 0);
    }
  };
  Object.defineProperty(wait, ORIGINAL_WAIT, { value: original });
  Atomics.wait = wait as typeof Atomics.wait;
}
