import { coreState, type ThreadsState } from './state.js';
import { type Channel, isWorkerCheap, workerThreads, workerThreadsLoaded } from './thread.js';
import type { CloseReportEntry } from './types.js';
import { applyWorkersGuard } from './workersGuard.js';

/**
 * Threads that stop one another without losing native work in flight. A Worker inside a native
 * call cannot run JS to answer a message, so what must be known at once lives in memory shared
 * with the thread that stops it: each thread's words (below). Messages only wake a thread whose
 * event loop is idle. Discovery: each Worker announces its words on one BroadcastChannel (the
 * directory) when devexit loads in it; every thread that created Workers listens there (and asks
 * again when it starts listening, so announcements made before are not lost).
 */

// The words of a thread (Int32Array over a SharedArrayBuffer), then a section's name in bytes.
/** What the thread did with a stop: RUNNING, SEEN, CLOSED, GONE or DRAINED. */
export const W_STATE = 0;
/** Critical sections open on the thread now. */
export const W_COUNT = 1;
/** The stop asked of it: NONE, EXIT, TERMINATE, SHUTDOWN (set once, by compare-and-swap). */
export const W_STOP = 2;
/** JS closes registered in the thread's realm (it has something to close). */
export const W_NEEDS = 3;
/** The exit code of the stop. */
export const W_CODE = 4;
/** 1: the stopper runs the native closes itself (shutdown with @devexit/native in its realm). */
export const W_NATIVE = 5;
/** Bytes of the name of the last critical section entered (written when a stop arrives). */
export const W_NAME_LENGTH = 6;
/** 1 once the thread that would stop this one knows its words (its answer to the hello). */
export const W_KNOWN = 7;
const WORDS = 8;
const NAME_BYTES = 96;
/**
 * After the name (so that another copy's layout of the words before it holds): whether the thread
 * is blocked in Atomics.wait outside any critical section (workerSide.ts wraps it in a Worker).
 * 0: not; n > 0: the n-th such wait, still blocked; BLOCKED_GIVEN_UP: its stopper stopped waiting
 * for it (the thread must not start its closes after that: the process is ending under it).
 */
export const W_BLOCKED = (WORDS * 4 + NAME_BYTES) / 4;
export const BLOCKED_GIVEN_UP = -1;
/** Atomics.wait as the runtime has it (a Worker's is wrapped: devexit's own waits are not blocks). */
export const ORIGINAL_WAIT = Symbol.for('@devexit/core/Atomics.wait');
export function atomicsWait(): typeof Atomics.wait {
  const wait = Atomics.wait as typeof Atomics.wait & { [ORIGINAL_WAIT]?: typeof Atomics.wait };
  return wait[ORIGINAL_WAIT] ?? wait;
}

export const RUNNING = 0;
export const SEEN = 1;
export const CLOSED = 2;
export const GONE = 3;
export const DRAINED = 4;

export const STOP_NONE = 0;
export const STOP_EXIT = 1;
export const STOP_TERMINATE = 2;
export const STOP_SHUTDOWN = 3;

const DIRECTORY = '@devexit/core/threads';
export const channelOf = (threadId: number): string => `@devexit/core/thread/${threadId}`;
const PARENT_KEY = '@devexit/core/parent';
/**
 * Set in the main thread's process.env (Workers get a copy when they are created): "this process's
 * main thread runs devexit and answers the hellos of the Workers it creates". Its value is the pid,
 * so that a child process, which inherits the variable, does not take it for its own.
 */
const MAIN_LISTENS = '__DEVEXIT_MAIN_LISTENS';

export type Hello = { op: 'hello'; threadId: number; parent: number; words: SharedArrayBuffer };
export type Bye = { op: 'bye'; threadId: number };
export type Who = { op: 'who' };
/** A wake-up: the stop itself is in the words. `deadline`: Date.now() of the one deadline. */
export type StopMessage = { op: 'stop'; deadline: number };
/** A Worker's shutdown entries, for its stopper's report. */
export type Report = { op: 'report'; threadId: number; entries: CloseReportEntry[] };

function knownMap(): ThreadsState['known'] {
  return threadsState().known;
}

/** This realm's Worker bookkeeping, made on first use. */
export function threadsState(): ThreadsState {
  const state = coreState();
  if (!state.threads) {
    const words = new Int32Array(new SharedArrayBuffer(WORDS * 4 + NAME_BYTES + 4));
    state.threads = {
      own: words,
      known: new Map(),
      children: new Map(),
      directory: undefined,
      announced: false,
      kick: undefined,
      stopping: undefined,
      lastName: undefined,
      lastFn: undefined,
    };
  }
  return state.threads;
}

/**
 * Tells this thread's stopper whether it has JS closes to run (where it can be stopped): those
 * registered, and a run of them in progress. A run empties the registry as it starts; until it
 * ends, a stopper must still wait for this thread (a Worker that ended itself runs its closes in
 * its exit layer: ended by its stopper's exit meanwhile, it would be torn down inside one).
 */
export function publishNeeds(): void {
  const state = coreState();
  const t = state.threads;
  if (t) Atomics.store(t.own, W_NEEDS, state.entries.size + (state.run ? 1 : 0));
}

/** This thread's id (0 on the main thread). */
export function ownThreadId(): number {
  return workerThreads().threadId;
}

/**
 * The thread that created this one, as it told its children (0: the main thread), and whether that
 * thread runs devexit (it answers this thread's hello: see waitKnown).
 */
export function parentThread(): { id: number; listens: boolean } {
  try {
    const p = workerThreads().getEnvironmentData(PARENT_KEY);
    if (typeof p === 'number') return { id: p, listens: true };
  } catch {
    // Older runtimes without environment data.
  }
  return { id: 0, listens: process.env[MAIN_LISTENS] === String(process.pid) };
}

/**
 * After its hello, a new Worker waits (blocking, before any of its own code runs) until the
 * thread that created it has read its words, so that no exit of that thread can come between
 * the Worker's first critical section and its stopper knowing of it (messages on two channels
 * arrive in no fixed order: the Worker's own 'ready' could be read first). Bounded: a creator
 * busy for longer than `ms` leaves the Worker to go on unknown, as without the wait.
 */
export function waitKnown(words: Int32Array, ms: number): void {
  atomicsWait()(words, W_KNOWN, 0, ms);
}

let reportListeners: Array<(r: Report) => void> = [];

function onDirectory(event: unknown): void {
  const msg = (event as { data?: Hello | Bye | Who | Report }).data;
  if (!msg || typeof msg !== 'object') return;
  if (msg.op === 'hello' && msg.threadId !== ownThreadIdCached()) {
    const words = new Int32Array(msg.words);
    knownMap().set(msg.threadId, { words, parent: msg.parent });
    if (msg.parent === ownThreadIdCached()) {
      Atomics.store(words, W_KNOWN, 1);
      Atomics.notify(words, W_KNOWN);
    }
  } else if (msg.op === 'bye') {
    knownMap().delete(msg.threadId);
  } else if (msg.op === 'who') {
    announceAgain?.();
  } else if (msg.op === 'report') {
    for (const l of reportListeners) l(msg);
  }
}

let cachedThreadId: number | undefined;
function ownThreadIdCached(): number {
  cachedThreadId ??= ownThreadId();
  return cachedThreadId;
}

/** Set by the Worker side: answers a 'who' with a new announcement. */
let announceAgain: (() => void) | undefined;
export function onWho(fn: () => void): void {
  announceAgain = fn;
}

/** Listens on the directory (once per realm) and asks every Worker to announce itself again. */
export function listen(): Channel {
  const t = threadsState();
  if (t.directory) return t.directory;
  const ch = new BroadcastChannel(DIRECTORY) as unknown as Channel;
  ch.onmessage = onDirectory;
  // Listening must not keep a thread alive.
  (ch as unknown as { unref?: () => void }).unref?.();
  t.directory = ch;
  ch.postMessage({ op: 'who' } satisfies Who);
  return ch;
}

/** Tells every listening thread about this one (a Worker). */
export function announce(hello: Hello): void {
  listen().postMessage(hello);
}

export function sayBye(threadId: number): void {
  try {
    threadsState().directory?.postMessage({ op: 'bye', threadId } satisfies Bye);
  } catch {
    // The channel may be closed already.
  }
}

/** Children of this realm get its id as their parent. */
export function tellChildrenParent(threadId: number): void {
  try {
    workerThreads().setEnvironmentData(PARENT_KEY, threadId);
  } catch {
    // Older runtimes without environment data: children take the main thread as their parent.
  }
}

export function onReport(fn: (r: Report) => void): () => void {
  reportListeners.push(fn);
  return () => {
    reportListeners = reportListeners.filter((l) => l !== fn);
  };
}

/** A thread ended (its 'exit' event, seen by its parent): it and its descendants are gone. */
export function markGone(threadId: number): void {
  const known = knownMap();
  const k = known.get(threadId);
  if (k) {
    Atomics.store(k.words, W_STATE, GONE);
    Atomics.notify(k.words, W_STATE);
    known.delete(threadId);
  }
  for (const [id, other] of [...known]) if (other.parent === threadId) markGone(id);
}

/** What a realm arms when it makes its first Worker: the exit layer (index.ts wires it). */
let onFirstWorker: (() => void) | undefined;

function onWorkerCreated(worker: import('node:worker_threads').Worker): void {
  const t = threadsState();
  listen();
  onFirstWorker?.();
  const id = worker.threadId;
  t.children.set(id, worker);
  worker.once('exit', () => {
    t.children.delete(id);
    markGone(id);
  });
  applyWorkersGuard();
}

/**
 * Every realm learns of the Workers it creates (cheap: no module is loaded for it). A realm where
 * worker_threads is loaded already (every Worker; a main thread that made Workers before devexit
 * loaded) listens at once. Once per realm, whichever copy of core comes first.
 */
export function armThreads(armExit: () => void): void {
  onFirstWorker = armExit;
  // Nothing made here for a process that never has a Worker: the shared words come on first use.
  const state = coreState();
  if (state.threadsArmed) return;
  state.threadsArmed = true;
  state.workerCreated = onWorkerCreated;
  process.on('worker', onWorkerCreated);
  // The main thread tells the Workers it will create that it answers their hellos.
  if (!isWorkerCheap()) {
    try {
      process.env[MAIN_LISTENS] = String(process.pid);
    } catch {
      // A process.env that refuses writes: its Workers go on without waiting (see waitKnown).
    }
  }
  if (workerThreadsLoaded()) {
    listen();
    // Node tells a realm of the Worker it created on the next tick ('worker'): a main thread
    // that loaded worker_threads before devexit may create Workers and keep its event loop busy
    // until it exits, without that tick. Its exit layer, armed now, still stops them (their
    // hellos wait on the directory, read at exit).
    if (!isWorkerCheap()) armExit();
  }
}

// ---- stopping threads ------------------------------------------------------------------------

/**
 * The directory's messages that this thread's event loop has not delivered yet (it was busy: a
 * Worker's hello sent then, its 250 ms wait over, left it unknown), read now, in order: a thread
 * about to stop its Workers knows every one that announced itself.
 */
function readPending(): void {
  const ch = threadsState().directory;
  if (!ch) return;
  try {
    const receive = workerThreads().receiveMessageOnPort as (
      port: unknown,
    ) => { message: unknown } | undefined;
    for (let i = 0; i < 100_000; i++) {
      const m = receive(ch);
      if (!m) return;
      onDirectory({ data: m.message });
    }
  } catch {
    // A runtime that cannot read a BroadcastChannel synchronously: its event loop delivers them.
  }
}

/** The threads `stopper` stops: every known one from the main thread, else its descendants. */
export function targets(all: boolean): Array<[number, Int32Array]> {
  readPending();
  const known = knownMap();
  const out: Array<[number, Int32Array]> = [];
  if (all) {
    for (const [id, k] of known) out.push([id, k.words]);
    return out;
  }
  const mine = new Set<number>(threadsState().children.keys());
  // Descendants: children, then theirs (parents announce before their children can).
  let grew = true;
  while (grew) {
    grew = false;
    for (const [id, k] of known) {
      if (!mine.has(id) && mine.has(k.parent)) {
        mine.add(id);
        grew = true;
      }
    }
  }
  for (const id of mine) {
    const k = known.get(id);
    if (k) out.push([id, k.words]);
  }
  return out;
}

export function knownWords(threadId: number): Int32Array | undefined {
  return knownMap().get(threadId)?.words;
}

/**
 * Asks `mode` in a thread's stop word. The first stop asked stays, except that an exit or a
 * terminate() replaces a shutdown's word (the thread is still there, draining or drained: the
 * exit asks for more). Returns the word that was there.
 */
export function putStop(words: Int32Array, mode: number): number {
  const was = Atomics.compareExchange(words, W_STOP, STOP_NONE, mode);
  if (was === STOP_SHUTDOWN && mode !== STOP_SHUTDOWN)
    Atomics.compareExchange(words, W_STOP, STOP_SHUTDOWN, mode);
  return was;
}

export function sectionName(words: Int32Array): string {
  const n = Atomics.load(words, W_NAME_LENGTH);
  if (n <= 0 || n > NAME_BYTES) return '';
  const bytes = new Uint8Array(words.buffer, WORDS * 4, n);
  return new TextDecoder().decode(bytes.slice());
}

/** Writes the name of the last section entered into this thread's words, for its stopper. */
export function publishSectionName(words: Int32Array, name: string): void {
  const bytes = new Uint8Array(words.buffer, WORDS * 4, NAME_BYTES);
  const { written } = new TextEncoder().encodeInto(name.slice(0, NAME_BYTES), bytes);
  Atomics.store(words, W_NAME_LENGTH, written ?? 0);
}
