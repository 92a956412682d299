import { abortError, checkSignal, withAbort } from './abort.js';
import { exitingError } from './errors.js';
import { isExiting } from './exiting.js';
import type { ThreadsState } from './state.js';
import { waitAsync } from './thread.js';
import { CLOSED, publishSectionName, threadsState, W_COUNT, W_STATE, W_STOP } from './threads.js';
import { checkOptions, describe, invalidType } from './validate.js';

export interface CriticalOptions {
  /**
   * Stop waiting: critical() rejects with an AbortError (an async fn only, or at once when
   * already aborted: then fn is not called). The section itself stays open until fn's promise
   * settles: the native work it stands for is still in flight.
   */
  signal?: AbortSignal;
  /** How a report names the section if it is still open at a deadline (default: fn's name). */
  name?: string;
  /**
   * For a library's own close or drain: the section is entered even after exit or shutdown
   * began (it is still waited for), until the thread's closes ran and it told its stopper so.
   * Without it, critical() refuses new sections once exit or shutdown began.
   */
  closing?: boolean;
}

let words: Int32Array | undefined;
let threads: ThreadsState | undefined;

function own(): Int32Array {
  threads ??= threadsState();
  words ??= threads.own;
  return words;
}

function leave(): void {
  const w = words as Int32Array;
  // Only this thread writes its count: a plain decrement (Atomics cost ~20 ns each here). Who
  // waits for the count to drop is this thread's own stop (the same thread sees it at once); a
  // stopper on another thread waits for this thread's answer, not for the count.
  const n = (w[W_COUNT] as number) - 1;
  w[W_COUNT] = n;
  if (n === 0 && w[W_STOP] !== 0) {
    Atomics.notify(w, W_COUNT);
    // A stop waits for this: its wait ends on a later turn of the event loop, and its wake-up
    // message may still be queued, but the code after the section may never give the loop back
    // (an idle pool worker blocks in Atomics.wait until its next task: that wait runs the stop
    // itself, workerSide.ts). The stop moves on once the promise reactions queued now have run
    // (process.nextTick runs after the microtask queue drains), not before them: the code that
    // awaited the section runs first, and it may call the binding again at once, outside any
    // section, to read the result (@devexit/wgpu's getMappedRange() after mapAsync()). Told from
    // a microtask, the stopper could end the thread in the middle of that call (an abort: 20/20
    // runs of worker-fixtures --then-sync).
    const kick = threads?.kick;
    if (kick) process.nextTick(kick);
  }
}

function leaveWith<T>(value: T): T {
  leave();
  return value;
}

function leaveThrowing(error: unknown): never {
  leave();
  throw error;
}

function refuse(name: string | undefined): Error {
  // A stop asked of this thread, seen here before its wake-up message: start it now (the Worker
  // may otherwise end on its own first, its loop having nothing left to do).
  if (words !== undefined && words[W_STOP] !== 0) threads?.kick?.();
  return exitingError(`start a critical section${name ? ` (${describe(name)})` : ''}`);
}

/**
 * Runs `fn` as a critical section of the calling thread: a span of native work that must not be
 * cut (a call into a native package that returns into JS when it ends). devexit's exit closes,
 * shutdown() and terminate() wait for the thread's open sections to end before that thread's
 * closes run and before its environment is torn down, bounded by the one deadline.
 *
 * `fn` may be synchronous (its value is returned) or return a promise (a promise is returned
 * that settles with it, after the section ended). Once exit or shutdown began for this thread,
 * new sections are refused: it throws ERR_DEVEXIT_EXITING without calling `fn`. Cheap enough to
 * wrap every native call: no allocation for a synchronous fn without options.
 */
export function critical<T>(fn: () => T, options?: CriticalOptions): T {
  if (typeof fn !== 'function') throw invalidType('fn', 'a function', fn);
  const w = words ?? own();
  let signal: AbortSignal | undefined;
  let name: string | undefined;
  let closing = false;
  if (options !== undefined) {
    const o = checkOptions(options, 'critical() options', ['signal', 'name', 'closing']);
    signal = checkSignal(o.signal, 'options.signal');
    if (o.name !== undefined && typeof o.name !== 'string')
      throw invalidType('options.name', 'a string', o.name);
    if (o.closing !== undefined && typeof o.closing !== 'boolean')
      throw invalidType('options.closing', 'a boolean', o.closing);
    name = o.name as string | undefined;
    closing = o.closing === true;
    if (signal?.aborted) throw abortError(signal, 'critical()');
  }
  if (closing ? w[W_STATE] === CLOSED : w[W_STOP] !== 0 || isExiting()) throw refuse(name ?? fn.name);
  Atomics.add(w, W_COUNT, 1);
  // A stop asked between the check and the count is seen here: the count's increment and this
  // load are sequentially consistent, as are the stopper's store of the stop word and its load
  // of the count, so one of the two sees the other.
  if (!closing && Atomics.load(w, W_STOP) !== 0) {
    leave();
    throw refuse(name ?? fn.name);
  }
  // For a stopper's report: a named section publishes its name to the shared words when it
  // changes (a thread blocked in a call cannot tell it later); an unnamed one keeps its function,
  // whose name is published when a stop arrives (reading fn.name costs ~40 ns: not per call).
  const t = threads as ThreadsState;
  if (name !== undefined) {
    if (name !== t.lastName) {
      t.lastName = name;
      publishSectionName(w, name);
    }
  } else t.lastFn = fn;
  let result: T;
  try {
    result = fn();
  } catch (err) {
    leave();
    throw err;
  }
  if (
    result === null ||
    typeof result !== 'object' ||
    typeof (result as { then?: unknown }).then !== 'function'
  ) {
    leave();
    return result;
  }
  let chained: Promise<unknown>;
  try {
    chained = (result as unknown as PromiseLike<unknown>).then(leaveWith, leaveThrowing) as Promise<unknown>;
  } catch (err) {
    leave();
    throw err;
  }
  return (signal ? withAbort(chained, signal, 'critical()') : chained) as T;
}

/** The name of the last section entered on this thread (for a report at a deadline). */
export function lastSectionName(): string {
  const t = threadsState();
  const fn = t.lastFn as { name?: unknown } | undefined;
  if (fn !== undefined) {
    t.lastFn = undefined;
    t.lastName = typeof fn.name === 'string' ? fn.name : '';
  }
  return t.lastName ?? '';
}

/** Publishes the last section's name, for a stopper (a stop arrived: this thread can answer). */
export function publishLastSection(): void {
  publishSectionName(own(), lastSectionName());
}

/** Open critical sections on this thread. */
export function openSections(): number {
  return Atomics.load(own(), W_COUNT);
}

/**
 * Waits (without blocking) until this thread's sections all ended, or `deadline` (Date.now())
 * passed. True if none is open.
 */
export async function sectionsEnded(deadline: number): Promise<boolean> {
  const w = own();
  for (;;) {
    const n = Atomics.load(w, W_COUNT);
    if (n === 0) return true;
    const left = deadline - Date.now();
    if (left <= 0) return false;
    const slice = Math.min(left, 100);
    const r = waitAsync(w, W_COUNT, n, slice);
    if (!r.async) continue;
    // waitAsync keeps nothing alive: a timer does, for as long as the wait.
    const keep = setTimeout(() => {}, slice + 5);
    await r.value;
    clearTimeout(keep);
  }
}
