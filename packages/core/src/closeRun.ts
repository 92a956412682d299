import { deviceTypeName } from './deviceId.js';
import { devexitWarning, observed, reportClosed, warn, writeStderr } from './diagnostics.js';
import { markExiting as markRealmExiting } from './exiting.js';
import { formatReportLine } from './report.js';
import { settings } from './settings.js';
import { type CloseRun, coreState, type JsEntry } from './state.js';
import { mainThread, nowMs } from './thread.js';
import { publishNeeds } from './threads.js';
import type { CloseReportEntry } from './types.js';

/**
 * Runs this realm's JS closes (devices in order, services last-registered-first), then, where
 * asked, the native ones; for the exit layers, closeServices() and shutdown().
 *
 * - Each close runs exactly once and has exactly one report entry, whatever it, an observer or
 *   the logger does: the entry is recorded (and its line printed) before any user code is told
 *   of it, and an exit called from inside a close or an observer continues the run.
 * - On the main thread with @devexit/native, the native watchdog bounds each close and each
 *   observer call by the run's deadline: past it, it reports what still runs and ends the
 *   process (by the shutdown's signal, else with the exit code; closeServices() only warns).
 */

const PROMISE_ERROR =
  'the close returned a promise: closes run synchronously at exit, where nothing awaits it (its result is ignored)';

export interface RunOptions {
  layer: string;
  markExiting: boolean;
  /** The code of the exit being closed for; undefined for closeServices() and shutdown(). */
  exitCode?: number | undefined;
  /** shutdown() started by this signal number: past the deadline the process ends by it. */
  signal?: number;
  /** closeServices(): a stuck close is reported, never ends the process. */
  unbounded?: boolean;
  /** shutdown(): the drains' outcome per close. */
  drained?: Map<JsEntry, boolean> | undefined;
  /** Run the native closes after the JS ones (closeAll): the exit layers and closeServices(). */
  nativeCloses: boolean;
  /** nowMs() of the deadline (default: the timeout from now). */
  deadline?: number;
}

function thenable(value: unknown): value is PromiseLike<unknown> {
  try {
    return (
      value !== null &&
      (typeof value === 'object' || typeof value === 'function') &&
      typeof (value as { then?: unknown }).then === 'function'
    );
  } catch {
    return false;
  }
}

/** Marks a returned promise's rejection handled: no fatal unhandled rejection, exit code kept. */
function settleQuietly(value: PromiseLike<unknown>): void {
  try {
    value.then(undefined, () => {});
  } catch {
    // A thenable whose then() throws: nothing to handle.
  }
}

export function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message;
  try {
    return String(err);
  } catch {
    return 'a value that cannot be shown';
  }
}

/** The code the process ends with when a shutdown's close is stuck and no signal started it. */
function shutdownCode(): number {
  const c = process.exitCode;
  return typeof c === 'number' ? c : 0;
}

function queueText(queue: JsEntry[]): string {
  let text = '';
  for (const e of queue) text += `${e.type}\t${e.index}\t${e.service}\n`;
  return text;
}

/** Starts watching `what` (main thread, native loaded); entry: the close it belongs to. */
function watch(run: CloseRun, what: string, e: JsEntry | undefined): void {
  if (!run.watched) return;
  const native = coreState().native;
  if (!native) return;
  const exitCode = run.exitCode ?? (run.unbounded ? -1 : shutdownCode());
  if (native.watch) {
    native.watch(
      {
        layer: run.layer,
        exitCode,
        signal: run.signal,
        type: e?.type ?? 0,
        index: e?.index ?? 0,
        service: e?.service ?? '',
        what,
        // Once a run (not per close: a long queue would cost its square).
        ...(run.queueSent ? {} : { queue: queueText(run.queue) }),
        started: run.next,
      },
      Math.max(0, run.deadline - nowMs()),
    );
    run.queueSent = true;
  } else if (e) {
    // An older registry owner: closes only, an explicit run never ends the process.
    native.jsCloseBegin(run.layer, run.exitCode ?? -1, e.type, e.index, e.service);
  }
}

/** Stops watching: 2 if the watchdog already reported it, 1 if past the deadline, else 0. */
function unwatch(run: CloseRun, e: JsEntry | undefined): number {
  const native = coreState().native;
  if (run.watched && native) {
    if (native.unwatch) return native.unwatch();
    if (e) return native.jsCloseEnd() ? 1 : 0;
  }
  return nowMs() > run.deadline ? 1 : 0;
}

/** Runs code of the application's (an observer, the logger) under the watchdog. */
function observe(run: CloseRun, what: string, fn: () => void): void {
  watch(run, what, undefined);
  try {
    fn();
  } finally {
    unwatch(run, undefined);
  }
}

function record(run: CloseRun, e: JsEntry, error: string | undefined, late: number): void {
  const state = coreState();
  const entry: CloseReportEntry = {
    device: { type: deviceTypeName(e.type), typeId: e.type, index: e.index },
    service: e.service,
    layer: run.layer,
    ms: Math.round((nowMs() - run.currentStart) * 1000) / 1000,
    outcome: error !== undefined ? 'error' : late > 0 ? 'timeout' : 'ok',
    pid: process.pid,
  };
  if (error !== undefined) entry.error = error;
  else if (late > 0) entry.error = 'finished after the deadline';
  const drained = run.drained?.get(e);
  if (drained !== undefined) entry.drained = drained;
  // Recorded and printed before any code of the application's hears of it: an observer or a
  // logger that exits or throws cannot lose or repeat it. The watchdog printed its own line for
  // a close it caught at the deadline.
  run.reported.add(e);
  run.entries.push(entry);
  state.report.push(entry);
  if (run.report !== 'off' && late < 2) writeStderr(`${formatReportLine(entry, run.report)}\n`);
  // At exit, process.emitWarning would never print: written synchronously, one close at a time
  // (a later close may never return). closeServices() and shutdown() warn once they return.
  if (!run.explicit && entry.outcome === 'error') {
    const line = `devexit: close of ${entry.device.type}:${entry.device.index}/${entry.service} failed: ${entry.error}`;
    observe(run, 'the logger', () =>
      warn(devexitWarning(line, 'DEVEXIT_CLOSE_FAILED'), { atExit: true, line }),
    );
  }
  if (observed('close')) observe(run, 'an observer of devexit:service:close', () => reportClosed(entry));
}

/** The close in progress ended (returned, threw, or exited): its one report entry. */
function endCurrent(run: CloseRun, error: string | undefined): void {
  const e = run.current;
  if (!e) return;
  run.current = undefined;
  const late = unwatch(run, e);
  if (!run.reported.has(e)) record(run, e, error, late);
}

/** Runs what is left of a run: its JS closes, then its native closes. Re-entered by nested exits. */
export function drive(run: CloseRun): void {
  const native = coreState().native;
  while (run.next < run.queue.length) {
    const e = run.queue[run.next++]!;
    run.current = e;
    run.currentStart = nowMs();
    watch(run, 'a JS close', e);
    let error: string | undefined;
    try {
      const result = e.close();
      if (thenable(result)) {
        settleQuietly(result);
        error = PROMISE_ERROR;
      }
    } catch (err) {
      error = messageOf(err);
    }
    endCurrent(run, error);
  }
  if (!run.nativeDone) {
    run.nativeDone = true;
    // Native services are process-wide: a Worker's exit must not close them.
    if (native && (run.explicit || mainThread())) {
      // The native report is read only when someone needs it: at exit it costs a parse.
      const keep = run.explicit || observed('close') || observed('exitEnd');
      // An exit during shutdown()'s native closes: the ones the engine finished are reported
      // here too (state.nativeAsync), not those of a closeServices() meanwhile (reported then).
      const pending = coreState().nativeAsync;
      coreState().nativeAsync = undefined;
      const before = keep ? native.report().length : 0;
      native.closeAll(run.layer, run.markExiting, run.exitCode);
      if (keep) {
        const report = native.report();
        const finished = pending
          ? report.slice(pending.from, before).filter((e) => e.layer === pending.layer)
          : [];
        const added = [...finished, ...report.slice(before)];
        run.entries.push(...added);
        if (observed('close'))
          observe(run, 'an observer of devexit:service:close', () => {
            for (const entry of added) reportClosed(entry);
          });
      }
    }
  }
  run.done = true;
}

/** Takes this realm's JS closes into a new run (the realm's current one): nothing runs yet. */
export function startRun(options: RunOptions): CloseRun {
  const state = coreState();
  if (options.markExiting) markRealmExiting();
  const queue = [...state.entries.values()];
  state.entries.clear();
  queue.sort((a, b) => a.type - b.type || a.index - b.index || b.seq - a.seq);
  const native = state.native;
  // Only JS closes use the deadline and the report mode here (native ones have their own): with
  // none, the exit path skips reading the settings.
  const watchers = observed('close') || observed('exitStart') || observed('exitEnd');
  const inForce = queue.length > 0 || watchers ? settings() : undefined;
  const run: CloseRun = {
    layer: options.layer,
    exitCode: options.exitCode,
    signal: options.signal ?? 0,
    markExiting: options.markExiting,
    explicit: options.exitCode === undefined,
    unbounded: options.unbounded === true,
    watched: native !== undefined && mainThread(),
    deadline: options.deadline ?? nowMs() + (inForce?.timeoutMs ?? Number.POSITIVE_INFINITY),
    report: inForce ? inForce.report : 'off',
    drained: options.drained,
    queue,
    next: 0,
    queueSent: false,
    current: undefined,
    currentStart: 0,
    reported: new Set(),
    nativeDone: !options.nativeCloses,
    done: false,
    entries: [],
  };
  state.run = run;
  publishNeeds();
  return run;
}

/** The run is over: it stops being the realm's current run, and its watch session ends. */
export function endRun(run: CloseRun): void {
  const state = coreState();
  if (state.run === run) {
    state.run = undefined;
    publishNeeds();
  }
  if (run.watched) state.native?.endWatch?.();
}

/** Drives a run to its end; it stops being the realm's current run. */
export function finishRun(run: CloseRun): CloseReportEntry[] {
  try {
    drive(run);
  } finally {
    endRun(run);
  }
  return run.entries;
}

/** startRun + finishRun. */
export function runCloses(options: RunOptions): CloseReportEntry[] {
  return finishRun(startRun(options));
}

/**
 * Runs `fn` (code of the application's, outside a run: an observer of a shutdown's start or end)
 * under the watchdog, for up to `timeoutMs`: past it, the process ends by `signal` (when > 0),
 * else with its exit code.
 */
export function watchedCall(
  layer: string,
  signal: number,
  timeoutMs: number,
  what: string,
  fn: () => void,
): void {
  const native = coreState().native;
  if (!native?.watch || !mainThread()) {
    fn();
    return;
  }
  native.watch({ layer, exitCode: shutdownCode(), signal, type: 0, index: 0, service: '', what }, timeoutMs);
  try {
    fn();
  } finally {
    native.unwatch?.();
    native.endWatch?.();
  }
}

/**
 * Runs `fn` (code of the application's: an observer of the exit's start) as part of `run`:
 * watched, and an exit it calls continues the run.
 */
export function observeRun(run: CloseRun, what: string, fn: () => void): void {
  observe(run, what, fn);
}

/** An exit asked for while a run is in progress: from inside one of its closes or observers. */
export function continueRun(run: CloseRun, code: number, how: string): void {
  if (run.current) endCurrent(run, `the close exited (${how}(${code}))`);
  run.exitCode = code;
  run.markExiting = true;
  markRealmExiting();
  run.explicit = false; // the process is ending: nobody reads the results, print them
  run.unbounded = false;
  // A shutdown's run leaves the native closes to closeAsync: the exit closes what is left.
  run.nativeDone = false;
  drive(run);
}
