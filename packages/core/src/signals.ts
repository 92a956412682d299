import { installExitHooks } from './exitLayer.js';
import { startShutdown } from './shutdown.js';
import { coreState } from './state.js';
import type { ShutdownSignal } from './types.js';

/**
 * Opt-in signals (configure({ signals }), DEVEXIT_SIGNALS), on the main thread.
 *
 * - The first one runs shutdown() with drain (every realm's drains and closes, the Workers'
 *   included), then the process ends by that signal: the listener is removed and the signal
 *   raised again, so a shell sees 128 + its number (130, 143).
 * - Whether the application handles the signal itself is decided when it arrives (its listeners
 *   then, `once` ones included, counted before any of them runs: by the exit layer's process.emit
 *   hook, else by devexit's listener, which is the first): if it does, devexit drains and closes
 *   and the application's handler decides how the process ends (it can `await shutdown()`).
 * - A second signal during the drain ends the process at once, by that signal (the application's
 *   own listeners, if any, decide instead).
 * - Work the application submits meanwhile is refused (ERR_DEVEXIT_EXITING): uncaught, that
 *   refusal does not change how the process ends (quietRefusals).
 * - A close stuck past the deadline ends the process by the first signal (the native watchdog,
 *   with @devexit/native loaded: JS cannot interrupt a synchronous close).
 *
 * Not signal-exit or exit-hook: both run synchronous handlers (no drain can be awaited) and
 * hook every exit path themselves, which devexit's exit layer already owns; exit-hook also ends
 * the process with process.exit(128 + n) instead of by the signal.
 */

// If the raised signal does not end the process (it cannot be, unless something blocks it): the
// code a shell would have shown.
const FALLBACK_EXIT_MS = 2000;

function signalNumber(signal: string): number {
  const n = (require('node:os') as typeof import('node:os')).constants.signals[signal as NodeJS.Signals];
  return typeof n === 'number' ? n : 15;
}

/** Listens to exactly `signals` (removing devexit's listeners on the others). Main thread only. */
export function installSignals(signals: readonly ShutdownSignal[]): void {
  const listeners = coreState().signalListeners;
  // Decided at a signal's arrival, before its listeners run: the exit layer's process.emit hook.
  if (signals.length > 0) installExitHooks();
  for (const [signal, listener] of listeners) {
    if (signals.includes(signal as ShutdownSignal)) continue;
    process.removeListener(signal, listener);
    listeners.delete(signal);
  }
  for (const signal of signals) {
    if (listeners.has(signal)) continue;
    // First among the listeners: Node delivers a signal through the process.emit in place when
    // the signal's first listener was added, so an application that listened before devexit's
    // hook was installed bypasses the hook's count; a `once` listener of its own, run before this
    // one, would then be gone from the count and its handler cut short by the raised signal.
    process.prependListener(signal, onSignal);
    listeners.set(signal, onSignal);
  }
}

function removeAll(): void {
  const listeners = coreState().signalListeners;
  for (const [signal, listener] of listeners) process.removeListener(signal, listener);
  listeners.clear();
}

/**
 * Ends the process by `signal` now: devexit's listeners removed, the signal raised again. As PID 1
 * (a container's entrypoint) the kernel delivers only signals that have a handler, so the raised
 * one would do nothing: it ends with 128 + the signal's number instead, as a shell would report it.
 */
function endBy(signal: NodeJS.Signals): void {
  removeAll();
  if (process.pid === 1) process.exit(128 + signalNumber(signal));
  process.kill(process.pid, signal);
  setTimeout(() => process.exit(128 + signalNumber(signal)), FALLBACK_EXIT_MS);
}

/**
 * While devexit ends the process by a signal, the application's work refused for it (a loop that
 * does not test isExiting() launches again once its read settled in the drain: ERR_DEVEXIT_EXITING,
 * thrown or rejected) would end the process with code 1 and a stack trace instead of by the
 * signal, which is what a process manager counts as a clean stop. That error alone is let go
 * then; any other is handled as without this listener (Node's own handling, on the next tick),
 * and nothing is done where the application listens for uncaught errors itself.
 */
function quietRefusals(): void {
  if (process.listenerCount('uncaughtException') > 0) return;
  const onUncaught = (err: unknown): void => {
    if ((err as { code?: unknown } | null)?.code === 'ERR_DEVEXIT_EXITING') return;
    process.removeListener('uncaughtException', onUncaught);
    if (process.listenerCount('uncaughtException') > 0) return; // the application's now
    process.nextTick(() => {
      throw err;
    });
  };
  process.on('uncaughtException', onUncaught);
}

function onSignal(signal: NodeJS.Signals): void {
  const state = coreState();
  // Counted by the process.emit hook as the signal arrived; a runtime that bypassed the hook: now.
  const appListens = state.appListens.get(signal) ?? process.listenerCount(signal) > 1;
  state.appListens.delete(signal);
  const current = state.shutdown;
  if (current && !current.done && current.signal !== undefined) {
    // A second signal during the drain.
    if (appListens) current.hurry();
    else endBy(signal);
    return;
  }
  if (state.exitLayerRan) return; // the process is already exiting
  const run = startShutdown(true, signal);
  if (!appListens) quietRefusals();
  const end = () => {
    if (appListens) return; // the application's handler decides
    // One more turn of the loop first: completions already delivered settle their promises.
    setImmediate(() => endBy(signal));
  };
  run.promise.then(end, end);
}
