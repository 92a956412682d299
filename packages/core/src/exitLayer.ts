import { deviceTypeName } from './deviceId.js';
import {
  devexitWarning,
  observed,
  reportClosed,
  reportExitEnd,
  reportExitStart,
  warn,
  writeStderr,
} from './diagnostics.js';
import { markExiting as markRealmExiting } from './exiting.js';
import { type CloseReportEntry, formatReportLine } from './report.js';
import { realmSettings, settings, warnOnce } from './settings.js';
import { installSignals } from './signals.js';
import { type CloseRun, coreState, type JsEntry } from './state.js';

/**
 * The JS exit layer: runs this realm's JS closes, then (on the main thread) the native ones,
 * before anything of the application's own exit handling.
 *
 * - It runs from process.emit('exit') before any listener, whenever listeners were added (a
 *   listener that exits or throws can no longer skip it), and from process.reallyExit, which
 *   skips the 'exit' event.
 * - With @devexit/native on the main thread, a native watchdog bounds each JS close by the
 *   deadline: past it, it warns naming the close and applies onTimeout.
 * - An exit called from inside a close (process.exit(), process.reallyExit()) continues the
 *   closes not yet run, then ends the process with the nested code (as Node does for a nested
 *   process.exit()).
 */

const PROMISE_ERROR =
  'the close returned a promise: closes run synchronously at exit, where nothing awaits it (its result is ignored)';

let isMain: boolean | undefined;
/**
 * Asked on the exit path. @devexit/native answers from the OS; otherwise node:worker_threads,
 * loaded on first use, not at startup (loading it costs 1-3 ms, most processes never get here).
 */
export function mainThread(): boolean {
  isMain ??=
    coreState().native?.isMainThread?.() ??
    (require('node:worker_threads') as typeof import('node:worker_threads')).isMainThread;
  return isMain;
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

function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message;
  try {
    return String(err);
  } catch {
    return 'a value that cannot be shown';
  }
}

function record(run: CloseRun, error: string | undefined, late: boolean): void {
  const e = run.current;
  if (!e) return;
  run.current = undefined;
  const state = coreState();
  const entry: CloseReportEntry = {
    device: { type: deviceTypeName(e.type), typeId: e.type, index: e.index },
    service: e.service,
    layer: run.layer,
    ms: Math.round((performance.now() - run.currentStart) * 1000) / 1000,
    outcome: error !== undefined ? 'error' : late ? 'timeout' : 'ok',
    pid: process.pid,
  };
  if (error !== undefined) entry.error = error;
  else if (late) entry.error = 'finished after the deadline';
  const drained = run.drained?.get(e);
  if (drained !== undefined) entry.drained = drained;
  run.entries.push(entry);
  state.report.push(entry);
  // At exit, process.emitWarning would never print: written synchronously, one close at a time
  // (a later close may never return). closeServices() and shutdown() warn once they return.
  if (!run.explicit && entry.outcome === 'error') {
    const line = `devexit: close of ${entry.device.type}:${entry.device.index}/${entry.service} failed: ${entry.error}`;
    warn(devexitWarning(line, 'DEVEXIT_CLOSE_FAILED'), { atExit: true, line });
  }
  if (run.report !== 'off') writeStderr(`${formatReportLine(entry, run.report)}\n`);
  reportClosed(entry);
}

function endCurrent(run: CloseRun, error: string | undefined): void {
  const native = coreState().native;
  const late = run.watched && native ? native.jsCloseEnd() : performance.now() > run.deadline;
  record(run, error, late);
}

/** Runs what is left of a run: its JS closes, then its native closes. Re-entered by nested exits. */
function drive(run: CloseRun): void {
  const native = coreState().native;
  while (run.next < run.queue.length) {
    const e = run.queue[run.next++]!;
    run.current = e;
    run.currentStart = performance.now();
    if (run.watched && native) native.jsCloseBegin(run.layer, run.exitCode ?? -1, e.type, e.index, e.service);
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
      const before = keep ? native.report().length : 0;
      native.closeAll(run.layer, run.markExiting, run.exitCode);
      if (keep) {
        const added = native.report().slice(before);
        run.entries.push(...added);
        for (const entry of added) reportClosed(entry);
      }
    }
  }
  run.done = true;
}

/** Takes this realm's JS closes (devices in order, services last-registered-first) and runs them. */
export function runCloses(
  layer: string,
  markExiting: boolean,
  exitCode: number | undefined,
  drained?: Map<JsEntry, boolean>,
): CloseReportEntry[] {
  const state = coreState();
  if (markExiting) markRealmExiting();
  const queue = [...state.entries.values()];
  state.entries.clear();
  queue.sort((a, b) => a.type - b.type || a.index - b.index || b.seq - a.seq);
  const native = state.native;
  // Only JS closes use the deadline and the report mode here (native ones have their own): with
  // none, the exit path skips reading the settings.
  const inForce = queue.length > 0 ? settings() : undefined;
  const run: CloseRun = {
    layer,
    exitCode,
    markExiting,
    explicit: exitCode === undefined,
    watched: native !== undefined && mainThread(),
    deadline: inForce ? performance.now() + inForce.timeoutMs : 0,
    report: inForce ? inForce.report : 'off',
    drained,
    queue,
    next: 0,
    current: undefined,
    currentStart: 0,
    nativeDone: false,
    done: false,
    entries: [],
  };
  state.run = run;
  try {
    drive(run);
  } finally {
    if (state.run === run) state.run = undefined;
  }
  return run.entries;
}

/** An exit asked for while a run is in progress: from inside one of its closes. */
function continueRun(run: CloseRun, code: number, how: string): void {
  if (run.current) endCurrent(run, `the close exited (${how}(${code}))`);
  run.exitCode = code;
  run.markExiting = true;
  markRealmExiting();
  run.explicit = false; // the process is ending: nobody reads the results, print them
  drive(run);
}

function exitCodeOf(code: unknown): number {
  if (typeof code === 'number' && Number.isInteger(code)) return code;
  const fallback = process.exitCode;
  return typeof fallback === 'number' ? fallback : 0;
}

/** The layer itself: once per realm, or the continuation of a run an exit interrupted. */
function onExit(code: unknown, how: 'process.exit' | 'process.reallyExit'): void {
  const state = coreState();
  if (!settings().layers.js) return;
  const exitCode = exitCodeOf(code);
  if (state.run && !state.run.done) {
    state.exitLayerRan = true;
    continueRun(state.run, exitCode, how);
    return;
  }
  if (state.exitLayerRan) return;
  state.exitLayerRan = true;
  const layer = !mainThread() ? 'worker-exit' : how === 'process.exit' ? 'js-exit' : 'really-exit';
  const start = performance.now();
  reportExitStart({ layer, code: exitCode });
  const entries = runCloses(layer, true, exitCode);
  reportExitEnd({ layer, code: exitCode }, performance.now() - start, entries);
}

function onExitEvent(code: unknown): void {
  onExit(code, 'process.exit');
}

type Emit = (this: NodeJS.Process, event: string | symbol, ...args: unknown[]) => boolean;
type ReallyExit = (this: NodeJS.Process, code?: number) => never;

/** Installs the layer's hooks once per realm; says so when one cannot be installed. */
export function installExitHooks(): void {
  const state = coreState();
  if (state.hooksInstalled) return;
  state.hooksInstalled = true;
  const proc = process as unknown as { emit: Emit; reallyExit: ReallyExit };
  const failed: string[] = [];
  try {
    // Before any listener, however they were added: process.emit('exit') is what Node calls at
    // natural end, process.exit() and fatal errors.
    const emit = proc.emit;
    proc.emit = function devexitEmit(this: NodeJS.Process, event, ...args) {
      if (event === 'exit') onExitEvent(args[0]);
      return emit.call(this, event, ...args);
    };
  } catch {
    failed.push('process.emit');
  }
  try {
    // A fallback should process.emit be replaced by something that skips the hook above.
    process.prependListener('exit', onExitEvent);
  } catch {
    failed.push("an 'exit' listener");
  }
  try {
    // process.reallyExit skips the 'exit' event; process.exit() calls it after the event.
    const reallyExit = proc.reallyExit;
    proc.reallyExit = function devexitReallyExit(this: NodeJS.Process, code?: number): never {
      onExit(code, 'process.reallyExit');
      return reallyExit.call(this, code);
    };
  } catch {
    failed.push('process.reallyExit');
  }
  if (failed.length > 0) {
    warnOnce(
      `devexit: could not hook ${failed.join(', ')}: JS closes may not run on every exit path`,
      'DEVEXIT_LAYER_NOT_ARMED',
    );
  }
  // DEVEXIT_SIGNALS: from the first registration on, a signal drains and closes first. None set
  // (the usual case): nothing to listen to, and no need to ask which thread this is.
  const { signals } = realmSettings();
  if (signals.length > 0 && mainThread()) installSignals(signals);
}
