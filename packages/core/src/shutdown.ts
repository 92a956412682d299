import { checkSignal, withAbort } from './abort.js';
import { finishRun, startRun, watchedCall } from './closeRun.js';
import { lastSectionName, sectionsEnded } from './critical.js';
import { observed, reportClosed, reportExitEnd, reportExitStart, warn } from './diagnostics.js';
import { ServiceCloseError } from './errors.js';
import { markExiting } from './exiting.js';
import { settings } from './settings.js';
import { type CoreState, coreState, type JsEntry, type ShutdownRun } from './state.js';
import { endStuck, reportStuck, reportUnanswered, type Stuck, stopAsync, unanswered } from './stopThreads.js';
import { mainThread, nowMs, workerThreads } from './thread.js';
import { DRAINED, GONE, onReport, STOP_SHUTDOWN, targets, W_COUNT, W_STATE, W_STOP } from './threads.js';
import type { CloseReportEntry } from './types.js';
import { checkOptions, invalidType } from './validate.js';

/** The layer shutdown()'s closes report (devexit.h: DEVEXIT_LAYER_SHUTDOWN). */
export const SHUTDOWN_LAYER = 'shutdown';

export interface ShutdownOptions {
  /** Finish queued work before closing (default true); false closes at once, dropping it. */
  drain?: boolean;
  /**
   * Stop waiting: the rest of the drain is skipped (what is left is dropped and closed, as by a
   * second signal) and this call rejects with an AbortError. The closes still run.
   */
  signal?: AbortSignal;
}

/** How a shutdown runs in this realm (a Worker's, asked by the thread stopping it). */
export interface RealmShutdown {
  /** Run the native closes here (false: the stopper runs them, after every realm's JS closes). */
  nativeCloses?: boolean;
  /** Date.now() of the drain's deadline (the stopper's); default: the timeout from now. */
  deadline?: number;
  /**
   * Asked by a stopper (a Worker's shutdown from its main thread or parent Worker). Its list holds
   * every descendant of this realm already (each reports to it), so they are not stopped again
   * here (their closes would be reported twice, and a report posted before this realm listened
   * waited for until the deadline). A section of this realm still open at the deadline is left to
   * the stopper too: it sees it in this thread's words and ends the process by its own signal
   * and exit code.
   */
  byStopper?: boolean;
}

/**
 * The graceful path: refuses new work (isExiting() turns true, process-wide with
 * @devexit/native), awaits the JS closes' drains and every critical section, in this realm and in
 * every Worker (each on its own thread), then closes: the JS closes first, then each native
 * service finishes its queue (their promises settle with real results) and closes. A JS close
 * that must follow some native work awaits it in its drain. Each phase is bounded
 * by the deadline (timeoutMs): what is left of the drain is dropped and closed as at exit, and the
 * report says so (drained: false, dropped: n); a close stuck past it ends the process.
 * Resolves with the closes it ran: this realm's JS closes, the Workers', and every native close.
 * Idempotent: later calls return the same promise (drain: false on a later call skips the rest
 * of the drain). The process goes on; a signal's shutdown ends it by the signal afterwards.
 */
export function shutdown(options?: ShutdownOptions): Promise<CloseReportEntry[]> {
  let drain = true;
  let signal: AbortSignal | undefined;
  try {
    const o = checkOptions(options, 'shutdown() options', ['drain', 'signal']);
    const d = o.drain;
    if (d !== undefined && typeof d !== 'boolean') throw invalidType('drain', 'a boolean', d);
    drain = d ?? true;
    signal = checkSignal(o.signal, 'signal');
  } catch (err) {
    return Promise.reject(err);
  }
  if (signal?.aborted) return withAbort(Promise.resolve([]), signal, 'shutdown()');
  const run = startShutdown(drain, undefined);
  return withAbort(run.promise, signal, 'shutdown()', () => run.hurry());
}

/** The shutdown of this realm: the one in progress (or done), else a new one. */
export function startShutdown(
  drain: boolean,
  signal: string | undefined,
  realm: RealmShutdown = {},
): ShutdownRun {
  const state = coreState();
  const current = state.shutdown;
  if (current) {
    if (!drain) current.hurry();
    current.signal ??= signal;
    return current;
  }
  const stop = new AbortController();
  const run: ShutdownRun = {
    promise: undefined as unknown as Promise<CloseReportEntry[]>,
    hurried: !drain,
    done: false,
    signal,
    hurry() {
      if (stop.signal.aborted) return;
      run.hurried = true;
      stop.abort();
      coreState().native?.hurryShutdown?.();
      hurryWorkers();
    },
  };
  state.shutdown = run;
  const done = () => {
    run.done = true;
  };
  run.promise = runShutdown(run, stop.signal, realm);
  run.promise.then(done, done);
  return run;
}

function hurryWorkers(): void {
  const t = coreState().threads;
  if (!t) return;
  for (const [id] of targets(mainThread())) {
    try {
      const ch = new BroadcastChannel(`@devexit/core/thread/${id}`);
      ch.postMessage({ op: 'hurry' });
      ch.close();
    } catch {
      // Gone.
    }
  }
}

function signalNumber(signal: string | undefined): number {
  if (!signal) return 0;
  const n = (require('node:os') as typeof import('node:os')).constants.signals[signal as NodeJS.Signals];
  return typeof n === 'number' ? n : 0;
}

/** Workers of this realm's process (main thread: all; a Worker: its own), their shutdown. */
function shutdownWorkers(
  state: CoreState,
  nativeHere: boolean,
  deadline: number,
):
  | {
      list: Array<[number, Int32Array]>;
      stuck: Promise<Stuck[]>;
      entries: CloseReportEntry[];
      stop(): void;
    }
  | undefined {
  if (!state.threads) return undefined;
  const list = targets(mainThread());
  if (list.length === 0) return undefined;
  const entries: CloseReportEntry[] = [];
  const ids = new Set(list.map(([id]) => id));
  const heard = new Set<number>();
  let heardAll: (() => void) | undefined;
  const stop = onReport((r) => {
    if (!ids.has(r.threadId) || heard.has(r.threadId)) return;
    heard.add(r.threadId);
    entries.push(...r.entries);
    heardAll?.();
  });
  const stuck = (async () => {
    const result = await stopAsync(list, STOP_SHUTDOWN, 0, nativeHere, deadline);
    // A Worker posts its entries, then says it drained (or, ending meanwhile, posts them from its
    // exit layer before it is gone): wait for the message too, bounded.
    const drained = list.filter(([, w]) => Atomics.load(w, W_STATE) === DRAINED).map(([id]) => id);
    const gone = list.filter(([, w]) => Atomics.load(w, W_STATE) === GONE).map(([id]) => id);
    const wait = (ids: number[], until: number) =>
      new Promise<void>((resolve) => {
        const missing = () => ids.some((id) => !heard.has(id));
        if (!missing()) return resolve();
        const timer = setTimeout(resolve, Math.max(0, until - Date.now()));
        heardAll = () => {
          if (missing()) return;
          clearTimeout(timer);
          resolve();
        };
      });
    await wait(drained, deadline + 50);
    // One ended by Node (terminated) never tells: a short grace only.
    await wait(gone, Math.min(deadline, Date.now() + 100));
    return result;
  })();
  return { list, stuck, entries, stop };
}

async function runShutdown(
  run: ShutdownRun,
  stop: AbortSignal,
  realm: RealmShutdown,
): Promise<CloseReportEntry[]> {
  const state = coreState();
  // Called from an 'exit' listener: the exit layer closed everything already.
  if (state.exitLayerRan) return [];
  const start = nowMs();
  markExiting();
  if (state.threads) Atomics.compareExchange(state.threads.own, W_STOP, 0, STOP_SHUTDOWN);
  const native = state.native;
  native?.beginShutdown?.();
  const signo = signalNumber(run.signal);
  const event = run.signal ? { layer: SHUTDOWN_LAYER, signal: run.signal } : { layer: SHUTDOWN_LAYER };
  const timeoutMs = settings().timeoutMs;
  if (observed('exitStart'))
    watchedCall(SHUTDOWN_LAYER, signo, timeoutMs, 'an observer of devexit:exit:start', () =>
      reportExitStart(event),
    );
  const deadline = realm.deadline ?? Date.now() + (run.hurried ? 0 : timeoutMs);
  const nativeHere = realm.nativeCloses !== false && native !== undefined;
  // Workers drain and close on their threads meanwhile; the native closes wait for their JS ones.
  const workers = realm.byStopper ? undefined : shutdownWorkers(state, nativeHere, deadline);
  const [drained, sectionsDone] = await Promise.all([
    drainJs(state, run.hurried ? 0 : deadline - Date.now(), stop),
    sectionsEnded(run.hurried ? Date.now() : deadline),
  ]);
  const workersStuck = workers ? await workers.stuck : [];
  workers?.stop();
  // A section of this realm still open at the deadline: its native work is in flight, and a close
  // run now could free what it uses. No close runs here; the process ends below (or, with
  // onTimeout 'warn', they run at exit).
  // This realm's JS closes first (a native close that exits cannot skip them), bounded by the
  // watchdog: a stuck one ends the process by the signal that started the shutdown.
  const entries: CloseReportEntry[] = [];
  if (sectionsDone) {
    const closeRun = startRun({
      layer: SHUTDOWN_LAYER,
      markExiting: true,
      signal: signo,
      drained,
      nativeCloses: false,
    });
    entries.push(...finishRun(closeRun));
  }
  if (sectionsDone && nativeHere && native) {
    state.nativeAsync = { from: native.report().length, layer: SHUTDOWN_LAYER };
    const asynchronous = native.closeAsync?.(SHUTDOWN_LAYER, Math.max(0, deadline - Date.now()));
    if (!asynchronous) state.nativeAsync = undefined;
    if (asynchronous) {
      const nativeEntries = await asynchronous;
      state.nativeAsync = undefined;
      for (const entry of nativeEntries) reportClosed(entry);
      entries.push(...nativeEntries);
    } else {
      // An older registry owner: the native closes now, as closeServices() does.
      const before = native.report().length;
      native.closeAll(SHUTDOWN_LAYER, true);
      entries.push(...native.report().slice(before));
    }
  }
  if (workers) entries.push(...workers.entries);
  for (const e of entries) {
    if (e.outcome === 'ok') continue;
    const device = { type: e.device.typeId, index: e.device.index };
    warn(new ServiceCloseError(device, e.service, new Error(e.error ?? e.outcome)));
  }
  if (workers)
    entries.push(
      ...reportUnanswered(unanswered(workers.list, STOP_SHUTDOWN), SHUTDOWN_LAYER, nowMs() - start),
    );
  const stuck = [...workersStuck];
  const t = state.threads;
  if (!sectionsDone && t && !realm.byStopper) {
    stuck.push({
      threadId: ownThreadIdSafe(),
      open: Atomics.load(t.own, W_COUNT),
      name: lastSectionName(),
      seen: true,
    });
  }
  if (stuck.length > 0) {
    entries.push(...reportStuck(stuck, SHUTDOWN_LAYER, nowMs() - start));
    endStuck(stuck, exitCodeNow(), run.signal);
  }
  if (observed('exitEnd'))
    watchedCall(SHUTDOWN_LAYER, signo, timeoutMs, 'an observer of devexit:exit:end', () =>
      reportExitEnd(event, nowMs() - start, entries),
    );
  return entries;
}

function ownThreadIdSafe(): number {
  try {
    return workerThreads().threadId;
  } catch {
    return 0;
  }
}

function exitCodeNow(): number {
  const c = process.exitCode;
  return typeof c === 'number' ? c : 0;
}

/** Runs the drain of each JS close that has one, in parallel, for up to drainMs or until `stop`. */
async function drainJs(state: CoreState, drainMs: number, stop: AbortSignal): Promise<Map<JsEntry, boolean>> {
  const drained = new Map<JsEntry, boolean>();
  const entries = [...state.entries.values()].filter((e) => e.drain);
  if (drainMs <= 0 || stop.aborted) {
    for (const e of entries) drained.set(e, false);
    return drained;
  }
  // What the drains are told, and what ends the wait: the deadline, or the drain cut short.
  const over = new AbortController();
  const end = () => over.abort();
  const timer = setTimeout(end, drainMs);
  stop.addEventListener('abort', end, { once: true });
  const ended = new Promise<false>((resolve) => over.signal.addEventListener('abort', () => resolve(false)));
  await Promise.all(
    entries.map(async (e) => {
      const work = (async () => e.drain?.(over.signal))().then(
        () => true,
        () => false,
      );
      drained.set(e, await Promise.race([work, ended]));
    }),
  );
  clearTimeout(timer);
  stop.removeEventListener('abort', end);
  return drained;
}
