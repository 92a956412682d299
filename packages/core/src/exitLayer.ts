import { continueRun, drive, endRun, observeRun, startRun } from './closeRun.js';
import { observed, reportExitEnd, reportExitStart } from './diagnostics.js';
import { settings, warnOnce } from './settings.js';
import { type CloseRun, coreState } from './state.js';
import { endStuck, reportStuck, reportUnanswered, stopSync, unanswered } from './stopThreads.js';
import { mainThread, nowMs } from './thread.js';
import {
  GONE,
  listen,
  ownThreadId,
  type Report,
  STOP_EXIT,
  sayBye,
  targets,
  W_STATE,
  W_STOP,
} from './threads.js';

/**
 * The JS exit layer: stops the Workers this thread is responsible for (their critical sections
 * end and their closes run on their own threads), then runs this realm's JS closes, then (on the
 * main thread) the native ones, before anything of the application's own exit handling.
 *
 * - It runs from process.emit('exit') before any listener, whenever listeners were added (a
 *   listener that exits or throws can no longer skip it), and from process.reallyExit, which
 *   skips the 'exit' event.
 * - The run is made before anything of the application's is called (an observer of
 *   devexit:exit:start): an exit called from there, or from inside a close, continues the run
 *   and then ends the process with the nested code (as Node does for a nested process.exit()).
 * - With @devexit/native on the main thread, a native watchdog bounds each JS close and each
 *   observer by the deadline: past it, it warns naming what still runs and applies onTimeout.
 */

function exitCodeOf(code: unknown): number {
  if (typeof code === 'number' && Number.isInteger(code)) return code;
  const fallback = process.exitCode;
  return typeof fallback === 'number' ? fallback : 0;
}

/**
 * Workers first: the main thread stops every Worker it knows, a Worker its own descendants. They
 * run their closes in parallel, on their threads, within the run's deadline; one still inside a
 * critical section then ends the process here (its environment cannot be torn down safely).
 */
function stopWorkers(run: CloseRun, code: number): void {
  const t = coreState().threads;
  if (!t) return;
  Atomics.compareExchange(t.own, W_STOP, 0, STOP_EXIT);
  const list = targets(mainThread());
  if (list.length === 0) return;
  const start = nowMs();
  const deadline = Date.now() + Math.max(0, run.deadline - nowMs());
  const stuck = stopSync(list, STOP_EXIT, code, deadline);
  run.entries.push(...reportUnanswered(unanswered(list, STOP_EXIT), run.layer, nowMs() - start));
  if (stuck.length === 0) return;
  run.entries.push(...reportStuck(stuck, run.layer, nowMs() - start));
  endStuck(stuck, code);
}

/** A Worker ending while its stopper waits for its shutdown: its closes go in the stopper's report. */
function tellStopper(run: CloseRun): void {
  const t = coreState().threads;
  if (!t || Atomics.load(t.own, W_STOP) === 0) return;
  try {
    listen().postMessage({ op: 'report', threadId: ownThreadId(), entries: run.entries } satisfies Report);
  } catch {
    // Nobody to tell.
  }
}

/** The layer itself: once per realm, or the continuation of a run an exit interrupted. */
function onExit(code: unknown, how: 'process.exit' | 'process.reallyExit'): void {
  const state = coreState();
  if (!settings().layers.js) return;
  const exitCode = exitCodeOf(code);
  if (state.run && !state.run.done) {
    state.exitLayerRan = true;
    const run = state.run;
    continueRun(run, exitCode, how);
    if (!mainThread()) {
      // A close exited: the thread ends here, and the frames of the run it interrupted never
      // resume. The stopper gets the entries, and stops waiting for this thread at once.
      if (state.threads) tellStopper(run);
      endRun(run);
      if (how === 'process.reallyExit') afterExitListeners();
    }
    return;
  }
  if (state.exitLayerRan) return;
  state.exitLayerRan = true;
  const layer = !mainThread() ? 'worker-exit' : how === 'process.exit' ? 'js-exit' : 'really-exit';
  const start = nowMs();
  const event = { layer, code: exitCode };
  const threads = state.threads !== undefined;
  const run = startRun({
    layer,
    markExiting: true,
    exitCode,
    nativeCloses: true,
    // Workers to wait for: the deadline counts from now even with no JS close of this realm's.
    deadline: threads ? nowMs() + settings().timeoutMs : undefined,
  });
  try {
    if (observed('exitStart'))
      observeRun(run, 'an observer of devexit:exit:start', () => reportExitStart(event));
    if (threads) stopWorkers(run, exitCode);
    drive(run);
    if (threads && layer === 'worker-exit') tellStopper(run);
    if (observed('exitEnd'))
      observeRun(run, 'an observer of devexit:exit:end', () =>
        reportExitEnd(event, nowMs() - start, run.entries),
      );
  } finally {
    endRun(run);
  }
}

function onExitEvent(code: unknown): void {
  onExit(code, 'process.exit');
}

/** A Worker's 'exit' listeners all ran: its stopper need not wait for it any more. */
function afterExitListeners(): void {
  const t = coreState().threads;
  if (!t || mainThread()) return;
  Atomics.store(t.own, W_STATE, GONE);
  Atomics.notify(t.own, W_STATE);
  sayBye(ownThreadId());
}

type Emit = (this: NodeJS.Process, event: string | symbol, ...args: unknown[]) => boolean;
type ReallyExit = (this: NodeJS.Process, code?: number) => never;

/**
 * signal-exit's listeners on each signal (v4 and v3 keep a count of their loaded copies: one
 * listener each). They end the process only where they are the signal's sole listeners (theirs
 * re-raises it then), so they do not count as the application deciding how it ends: with them
 * counted so, neither they nor devexit would end it (the process hung on SIGTERM until SIGKILL).
 */
function signalExitListeners(): number {
  let n = 0;
  for (const emitter of [
    (globalThis as Record<symbol, unknown>)[Symbol.for('signal-exit emitter')],
    (process as unknown as { __signal_exit_emitter__?: unknown }).__signal_exit_emitter__,
  ]) {
    const count = (emitter as { count?: unknown } | null | undefined)?.count;
    if (typeof count === 'number' && count > 0) n += count;
  }
  return n;
}

/** Whether listeners of the application's (not devexit's one, not signal-exit's) are on `signal`. */
export function appListensTo(signal: string): boolean {
  return process.listenerCount(signal) - 1 - signalExitListeners() > 0;
}

/** Before a signal's listeners run: whether the application listens to it too (signals.ts). */
function noteSignal(event: string | symbol): void {
  const state = coreState();
  if (typeof event !== 'string' || !state.signalListeners.has(event)) return;
  state.appListens.set(event, appListensTo(event));
}

/**
 * Once a signal started the shutdown (signals.ts), the application's work refused for it (a loop
 * that does not test isExiting() launches again once its read settled in the drain:
 * ERR_DEVEXIT_EXITING, thrown or rejected) is the expected end of that work, not an error: it
 * would end the process with code 1 and a stack trace instead of by the signal (what a process
 * manager counts as a clean stop), cut short the cleanup of an application that handles the signal
 * itself, or reach an error monitor's listener (Sentry's ends the process with code 1). Such an
 * error is handled here, before any listener: Node asks process.emit for 'uncaughtException'
 * (after 'uncaughtExceptionMonitor') and 'unhandledRejection', and a true answer means handled.
 */
function refusalLetGo(event: string | symbol, error: unknown): boolean {
  if (
    event !== 'uncaughtException' &&
    event !== 'unhandledRejection' &&
    event !== 'uncaughtExceptionMonitor'
  ) {
    return false;
  }
  return (
    coreState().signalAt !== undefined && (error as { code?: unknown } | null)?.code === 'ERR_DEVEXIT_EXITING'
  );
}

/** Installs the layer's hooks once per realm; says so when one cannot be installed. */
export function installExitHooks(): void {
  const state = coreState();
  if (state.hooksInstalled) return;
  state.hooksInstalled = true;
  state.exitLayer = onExit;
  const proc = process as unknown as { emit: Emit; reallyExit: ReallyExit };
  const failed: string[] = [];
  try {
    // Before any listener, however they were added: process.emit('exit') is what Node calls at
    // natural end, process.exit() and fatal errors; signals are emitted the same way.
    const emit = proc.emit;
    proc.emit = function devexitEmit(this: NodeJS.Process, event, ...args) {
      if (event === 'exit') {
        onExitEvent(args[0]);
        try {
          return emit.call(this, event, ...args);
        } finally {
          afterExitListeners();
        }
      }
      if (refusalLetGo(event, args[0])) return true;
      noteSignal(event);
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
}
