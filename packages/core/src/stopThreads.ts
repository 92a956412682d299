// Stopping other threads: asking each for its stop (threads.ts holds the words and the
// directory), waiting for their answers, blocking (an exit layer) or not (shutdown(),
// terminate()), and what is reported and done about a thread still inside a critical section at
// the deadline, or one that never answered.
import { devexitWarning, warn, writeStderr } from './diagnostics.js';
import { formatReportLine } from './report.js';
import { settings } from './settings.js';
import { coreState } from './state.js';
import { waitAsync } from './thread.js';
import {
  atomicsWait,
  BLOCKED_GIVEN_UP,
  CLOSED,
  channelOf,
  DRAINED,
  GONE,
  putStop,
  RUNNING,
  STOP_SHUTDOWN,
  type StopMessage,
  sectionName,
  W_BLOCKED,
  W_CODE,
  W_COUNT,
  W_NATIVE,
  W_NEEDS,
  W_STATE,
} from './threads.js';
import type { CloseReportEntry } from './types.js';

/**
 * How long a thread must stay blocked in one Atomics.wait, no section open, before its stopper
 * stops waiting for it: a lock's wait ends sooner; a pool's idle Worker waits for its next task.
 */
const BLOCKED_GRACE_MS = 100;

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
  putStop(words, mode);
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

/** A thread's timed-out entry: recorded in the report, and printed as the report setting says. */
function reportThread(
  threadId: number,
  service: string,
  layer: string,
  ms: number,
  error: string,
): CloseReportEntry {
  const entry: CloseReportEntry = {
    device: { type: 'thread', typeId: 0, index: threadId },
    service,
    layer,
    ms: Math.round(ms * 1000) / 1000,
    outcome: 'timeout',
    pid: process.pid,
    error,
  };
  coreState().report.push(entry);
  const mode = settings().report;
  if (mode !== 'off') writeStderr(`${formatReportLine(entry, mode)}\n`);
  return entry;
}

/** The report entry and warning of a critical section still open at the deadline. */
export function reportStuck(stuck: Stuck[], layer: string, ms: number): CloseReportEntry[] {
  return stuck.map((s) =>
    reportThread(
      s.threadId,
      `critical:${s.name || 'unnamed'}`,
      layer,
      ms,
      `${s.open} critical section(s) still running at the deadline${s.seen ? '' : ' (the thread did not answer: it is blocked inside a call)'}`,
    ),
  );
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
  const out = list.map((u) =>
    reportThread(
      u.threadId,
      'closes',
      layer,
      ms,
      u.blocked
        ? 'the Worker is blocked in Atomics.wait, no critical section open (a pool worker waiting for its next task): its closes did not run'
        : 'the Worker did not answer by the deadline (a synchronous loop): its closes did not run',
    ),
  );
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
