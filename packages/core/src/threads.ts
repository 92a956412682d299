import { devexitWarning, warn, writeStderr } from './diagnostics.js';
import { formatReportLine } from './report.js';
import { settings } from './settings.js';
import { coreState, type ThreadsState } from './state.js';
import { type Channel, isWorkerCheap, waitAsync, workerThreads, workerThreadsLoaded } from './thread.js';
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
/**
 * How long a thread must stay blocked in one Atomics.wait, no section open, before its stopper
 * stops waiting for it: a lock's wait ends sooner; a pool's idle Worker waits for its next task.
 */
const BLOCKED_GRACE_MS = 100;
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

/** Asks a thread to stop (once: the first stop asked wins); true if it needs waiting for. */
export function askStop(
  threadId: number,
  words: Int32Array,
  mode: number,
  code: number,
  nativeByStopper: boolean,
  deadline: number,
): boolean {
  if (Atomics.load(words, W_STATE) >= CLOSED) return false;
  Atomics.store(words, W_CODE, code | 0);
  Atomics.store(words, W_NATIVE, nativeByStopper ? 1 : 0);
  // An exit or a terminate() after a shutdown asks for more (the Worker is still there, drained):
  // it replaces the shutdown's word; otherwise the first stop asked stays.
  if (Atomics.compareExchange(words, W_STOP, STOP_NONE, mode) === STOP_SHUTDOWN && mode !== STOP_SHUTDOWN)
    Atomics.compareExchange(words, W_STOP, STOP_SHUTDOWN, mode);
  // Nothing open and nothing to close: the stop word alone refuses its new sections.
  if (Atomics.load(words, W_COUNT) === 0 && Atomics.load(words, W_NEEDS) === 0 && mode !== STOP_SHUTDOWN)
    return false;
  try {
    const ch = new BroadcastChannel(channelOf(threadId));
    ch.postMessage({ op: 'stop', deadline } satisfies StopMessage);
    ch.close();
  } catch {
    // No channel: the thread sees the stop word when its sections end.
  }
  return true;
}

/** Whether a thread answered a stop of `mode` (its closes ran, its shutdown ended, or it is gone). */
export function answered(words: Int32Array, mode: number): boolean {
  const s = Atomics.load(words, W_STATE);
  if (s === GONE || s === CLOSED) return true;
  return mode === STOP_SHUTDOWN && s === DRAINED;
}

/** A thread still inside a critical section past the deadline. */
export interface Stuck {
  threadId: number;
  open: number;
  name: string;
  /** The thread saw the stop (it waits for its own sections); false: it is blocked in a call. */
  seen: boolean;
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

/**
 * A stopper's look at a thread that has not answered: true once it has been blocked in the same
 * Atomics.wait, with no section open, for BLOCKED_GRACE_MS since `first` (the stopper's record of
 * that wait: updated here). Its event loop cannot run the stop: the stopper stops waiting for it,
 * and tells it so (it will not start its closes later).
 */
function blockedIdle(w: Int32Array, first: { n: number; at: number }): boolean {
  if (w.length <= W_BLOCKED || Atomics.load(w, W_COUNT) !== 0) return false;
  const n = Atomics.load(w, W_BLOCKED);
  if (n === BLOCKED_GIVEN_UP) return true;
  if (n === 0) {
    first.n = 0;
    return false;
  }
  const now = Date.now();
  if (n !== first.n) {
    first.n = n;
    first.at = now;
    return false;
  }
  if (now - first.at < BLOCKED_GRACE_MS) return false;
  return Atomics.compareExchange(w, W_BLOCKED, n, BLOCKED_GIVEN_UP) === n && Atomics.load(w, W_COUNT) === 0;
}

function stuckOf(list: Array<[number, Int32Array]>): Stuck[] {
  const out: Stuck[] = [];
  for (const [id, w] of list) {
    const open = Atomics.load(w, W_COUNT);
    if (open > 0 && Atomics.load(w, W_STATE) !== GONE)
      out.push({ threadId: id, open, name: sectionName(w), seen: Atomics.load(w, W_STATE) !== RUNNING });
  }
  return out;
}

/**
 * Stops `list` and waits on this thread (blocking: an exit layer) until each answered or the
 * deadline (Date.now()) passed. Returns the threads still inside a critical section then.
 */
export function stopSync(
  list: Array<[number, Int32Array]>,
  mode: number,
  code: number,
  deadline: number,
): Stuck[] {
  const waiting: Array<[number, Int32Array]> = [];
  for (const [id, w] of list) if (askStop(id, w, mode, code, false, deadline)) waiting.push([id, w]);
  const wait = atomicsWait();
  const firsts = waiting.map(() => ({ n: 0, at: 0 }));
  // All in parallel: each look goes over every thread still waited for.
  let pending = waiting.map((_, i) => i);
  while (pending.length > 0) {
    pending = pending.filter((i) => {
      const w = (waiting[i] as [number, Int32Array])[1];
      return !answered(w, mode) && !blockedIdle(w, firsts[i] as { n: number; at: number });
    });
    const first = pending[0];
    if (first === undefined) break;
    const left = deadline - Date.now();
    if (left <= 0) break;
    // Bounded waits, on one of them: a thread that ends without a word (terminated by Node), or
    // that blocks, is seen at the next look.
    const w = (waiting[first] as [number, Int32Array])[1];
    wait(w, W_STATE, Atomics.load(w, W_STATE), Math.min(left, pending.length > 1 ? 10 : 50));
  }
  return stuckOf(list);
}

/** The same, without blocking (shutdown(), terminate()): resolves with what is stuck at the end. */
export async function stopAsync(
  list: Array<[number, Int32Array]>,
  mode: number,
  code: number,
  nativeByStopper: boolean,
  deadline: number,
  gone?: Promise<unknown>,
): Promise<Stuck[]> {
  const waiting: Array<[number, Int32Array]> = [];
  for (const [id, w] of list)
    if (askStop(id, w, mode, code, nativeByStopper, deadline)) waiting.push([id, w]);
  let ended = false;
  gone?.then(() => {
    ended = true;
  });
  await Promise.all(
    waiting.map(async ([, w]) => {
      const first = { n: 0, at: 0 };
      for (;;) {
        const s = Atomics.load(w, W_STATE);
        if (ended || answered(w, mode) || blockedIdle(w, first)) return;
        const left = deadline - Date.now();
        if (left <= 0) return;
        const r = waitAsync(w, W_STATE, s, Math.min(left, 50));
        // A timer keeps the loop alive while waiting (waitAsync alone does not).
        const keep = setTimeout(() => {}, Math.min(left, 50) + 5);
        if (r.async) await Promise.race([r.value, gone ?? r.value]);
        clearTimeout(keep);
      }
    }),
  );
  return stuckOf(list);
}

/** The report entry and warning of a critical section still open at the deadline. */
export function reportStuck(stuck: Stuck[], layer: string, ms: number): CloseReportEntry[] {
  const mode = settings().report;
  const out: CloseReportEntry[] = [];
  for (const s of stuck) {
    const entry: CloseReportEntry = {
      device: { type: 'thread', typeId: 0, index: s.threadId },
      service: `critical:${s.name || 'unnamed'}`,
      layer,
      ms: Math.round(ms * 1000) / 1000,
      outcome: 'timeout',
      pid: process.pid,
      error: `${s.open} critical section(s) still running at the deadline${s.seen ? '' : ' (the thread did not answer: it is blocked inside a call)'}`,
    };
    out.push(entry);
    coreState().report.push(entry);
    if (mode !== 'off') writeStderr(`${formatReportLine(entry, mode)}\n`);
  }
  return out;
}

/** A thread that did not answer its stop, with closes of its own that did not run. */
export interface Unanswered {
  threadId: number;
  /** Blocked in Atomics.wait, its stopper gave up on it; false: still busy at the deadline. */
  blocked: boolean;
}

/**
 * Threads of `list` with closes of their own (JS closes registered there) that did not answer a
 * stop of `mode`, with no section open (those are `Stuck`): their event loop never ran the stop
 * (blocked in Atomics.wait, as an idle piscina or tinypool worker waits for its next task, or in
 * a synchronous loop until the deadline), so their closes did not run.
 */
export function unanswered(list: Array<[number, Int32Array]>, mode: number): Unanswered[] {
  const out: Unanswered[] = [];
  for (const [threadId, w] of list) {
    if (Atomics.load(w, W_NEEDS) === 0 || Atomics.load(w, W_COUNT) !== 0 || answered(w, mode)) continue;
    out.push({ threadId, blocked: w.length > W_BLOCKED && Atomics.load(w, W_BLOCKED) === BLOCKED_GIVEN_UP });
  }
  return out;
}

/** The report entry of each such thread, and one warning naming them. */
export function reportUnanswered(list: Unanswered[], layer: string, ms: number): CloseReportEntry[] {
  if (list.length === 0) return [];
  const mode = settings().report;
  const out: CloseReportEntry[] = [];
  for (const u of list) {
    const entry: CloseReportEntry = {
      device: { type: 'thread', typeId: 0, index: u.threadId },
      service: 'closes',
      layer,
      ms: Math.round(ms * 1000) / 1000,
      outcome: 'timeout',
      pid: process.pid,
      error: u.blocked
        ? 'the Worker is blocked in Atomics.wait, no critical section open (a pool worker waiting for its next task): its closes did not run'
        : 'the Worker did not answer by the deadline (a synchronous loop): its closes did not run',
    };
    out.push(entry);
    coreState().report.push(entry);
    if (mode !== 'off') writeStderr(`${formatReportLine(entry, mode)}\n`);
  }
  const s = settings();
  const say = (blocked: boolean) => {
    const ids = list.filter((u) => u.blocked === blocked).map((u) => u.threadId);
    if (ids.length === 0) return '';
    const what = `Worker${ids.length > 1 ? 's' : ''} ${ids.join(', ')}`;
    return blocked
      ? `${what} blocked in Atomics.wait (a pool's idle Workers wait so for their next task: piscina's atomics: 'async' or tinypool's useAtomics: false keep them answering)`
      : `${what} did not answer by the deadline (${s.timeoutMs} ms, ${s.sources.timeoutMs})`;
  };
  const parts = [say(true), say(false)].filter((p) => p !== '');
  warn(devexitWarning(`devexit: closes not run: ${parts.join('; ')}`, 'DEVEXIT_WORKER_UNANSWERED'), {
    atExit: true,
  });
  return out;
}

/** One line naming the sections that hold the process past its deadline. */
export function stuckText(stuck: Stuck[]): string {
  const s = settings();
  const what = stuck
    .map((x) => `Worker ${x.threadId} (${x.open} open${x.name ? `, the last entered: '${x.name}'` : ''})`)
    .join(', ');
  return `devexit: critical sections still running at the deadline (${s.timeoutMs} ms, ${s.sources.timeoutMs}): ${what}`;
}

/**
 * Past the deadline with a Worker still inside native work: tearing its environment down would
 * abort the process, and joining it may never end. With @devexit/native the process ends now with
 * `code`, skipping library teardown; without it, by SIGKILL (JS cannot end a process without
 * stopping its Workers first).
 */
export function endStuck(stuck: Stuck[], code: number, signal?: string): never | undefined {
  const native = coreState().native;
  if (settings().onTimeout !== 'exit') {
    warn(devexitWarning(`${stuckText(stuck)}; continuing (onTimeout: 'warn')`, 'DEVEXIT_TIMEOUT'), {
      atExit: true,
    });
    return undefined;
  }
  if (signal) {
    // A signal started it: the process ends by that signal, as without devexit.
    const signo = (require('node:os') as typeof import('node:os')).constants.signals[
      signal as NodeJS.Signals
    ];
    if (native?.endProcess && typeof signo === 'number')
      return native.endProcess(0, `${stuckText(stuck)}; ending the process by ${signal}\n`, signo);
    writeStderr(`${stuckText(stuck)}; ending the process by ${signal}\n`);
    for (const l of process.listeners(signal as NodeJS.Signals)) process.removeListener(signal, l);
    if (process.pid === 1 && typeof signo === 'number') process.exit(128 + signo);
    process.kill(process.pid, signal as NodeJS.Signals);
    return undefined;
  }
  const text = `${stuckText(stuck)}; skipping library teardown: exiting with code ${code}\n`;
  if (native?.endProcess) return native.endProcess(code, text);
  writeStderr(
    `${stuckText(stuck)}; ending the process by SIGKILL (load @devexit/native in the main thread to keep the exit code)\n`,
  );
  process.kill(process.pid, 'SIGKILL');
  return undefined;
}
