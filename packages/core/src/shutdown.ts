import { checkSignal, withAbort } from './abort.js';
import { reportClosed, reportExitEnd, reportExitStart, warn } from './diagnostics.js';
import { ServiceCloseError } from './errors.js';
import { markExiting } from './exiting.js';
import { runCloses } from './exitLayer.js';
import type { CloseReportEntry } from './report.js';
import { settings } from './settings.js';
import { type CoreState, coreState, type JsEntry, type ShutdownRun } from './state.js';
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

/**
 * The graceful path: refuses new work (isExiting() turns true, process-wide with
 * @devexit/native), lets every service finish what is queued (their promises settle with real
 * results), then closes them all, bounded by the deadline (timeoutMs): what is left then is
 * dropped and closed as at exit, and the report says so (drained: false, dropped: n).
 * Resolves with the closes it ran: this realm's JS closes, and every native close of the process.
 * Idempotent: later calls return the same promise (drain: false on a later call skips the rest
 * of the drain). The process goes on; a signal's shutdown ends it by the signal afterwards.
 */
export function shutdown(options?: ShutdownOptions): Promise<CloseReportEntry[]> {
  let drain = true;
  let signal: AbortSignal | undefined;
  try {
    const o = checkOptions(options, 'shutdown() options', ['drain', 'signal']);
    if (o.drain !== undefined && typeof o.drain !== 'boolean')
      throw invalidType('drain', 'a boolean', o.drain);
    drain = o.drain ?? true;
    signal = checkSignal(o.signal, 'signal');
  } catch (err) {
    return Promise.reject(err);
  }
  if (signal?.aborted) return withAbort(Promise.resolve([]), signal, 'shutdown()');
  const run = startShutdown(drain, undefined);
  return withAbort(run.promise, signal, 'shutdown()', () => run.hurry());
}

/** The shutdown of this realm: the one in progress (or done), else a new one. */
export function startShutdown(drain: boolean, signal: string | undefined): ShutdownRun {
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
    },
  };
  state.shutdown = run;
  const done = () => {
    run.done = true;
  };
  run.promise = runShutdown(run, stop.signal);
  run.promise.then(done, done);
  return run;
}

async function runShutdown(run: ShutdownRun, stop: AbortSignal): Promise<CloseReportEntry[]> {
  const state = coreState();
  // Called from an 'exit' listener: the exit layer closed everything already.
  if (state.exitLayerRan) return [];
  const start = performance.now();
  markExiting();
  const native = state.native;
  native?.beginShutdown?.();
  const event = run.signal ? { layer: SHUTDOWN_LAYER, signal: run.signal } : { layer: SHUTDOWN_LAYER };
  reportExitStart(event);
  const drainMs = run.hurried ? 0 : settings().timeoutMs;
  // Native services are process-wide: they drain and close on a helper thread, so that this
  // thread stays free to take their completions (and a second signal) meanwhile.
  const nativeRun = native?.closeAsync?.(SHUTDOWN_LAYER, drainMs);
  const drained = await drainJs(state, run.hurried ? 0 : drainMs, stop);
  const nativeEntries = nativeRun ? await nativeRun : [];
  for (const entry of nativeEntries) reportClosed(entry);
  // This realm's JS closes, now that their drains ended; closeAll then finds nothing left (or,
  // with an older registry owner, closes the native services now, as closeServices() does).
  const entries = [...runCloses(SHUTDOWN_LAYER, true, undefined, drained), ...nativeEntries];
  for (const e of entries) {
    if (e.outcome === 'ok') continue;
    const device = { type: e.device.typeId, index: e.device.index };
    warn(new ServiceCloseError(device, e.service, new Error(e.error ?? e.outcome)));
  }
  reportExitEnd(event, performance.now() - start, entries);
  return entries;
}

/** Runs the drain of each JS close that has one, in parallel, until drainMs or `stop`. */
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
