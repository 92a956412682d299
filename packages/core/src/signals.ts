import { appListensTo, installExitHooks } from './exitLayer.js';
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
 *   own listeners then, if any, decide instead: a `once` one is gone after the first signal, and
 *   the second ends the process, as without devexit); the same signal within SAME_SIGNAL_MS of the first is
 *   that one delivered twice (a terminal's Ctrl-C and a wrapper passing it on) and changes nothing.
 * - signal-exit's listeners are not the application's (appListensTo): devexit ends the process,
 *   its raised signal reaching them last, so their handlers run and they end it by the signal.
 * - Where the application listens, devexit's listeners go once the shutdown is done: a signal it
 *   raises again after its cleanup then ends the process.
 * - Work the application submits meanwhile is refused (ERR_DEVEXIT_EXITING): uncaught, that
 *   refusal does not change how the process ends, and no 'uncaughtException' or
 *   'unhandledRejection' listener sees it (the exit layer's refusalLetGo).
 * - A close stuck past the deadline ends the process by the first signal (the native watchdog,
 *   with @devexit/native loaded: JS cannot interrupt a synchronous close).
 *
 * Not signal-exit or exit-hook: both run synchronous handlers (no drain can be awaited) and
 * hook every exit path themselves, which devexit's exit layer already owns; exit-hook also ends
 * the process with process.exit(128 + n) instead of by the signal.
 */

/** A signal again within this many ms of the first is the same one delivered twice. */
const SAME_SIGNAL_MS = 300;

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

function onSignal(signal: NodeJS.Signals): void {
  const state = coreState();
  // Counted by the process.emit hook as the signal arrived; a runtime that bypassed the hook: now.
  const appListens = state.appListens.get(signal) ?? appListensTo(signal);
  state.appListens.delete(signal);
  const current = state.shutdown;
  if (current && !current.done && current.signal !== undefined) {
    // The same signal again at once: one signal delivered twice (a Ctrl-C reaches the program
    // from the terminal and again from a wrapper that passes it on: concurrently, timeout,
    // nodemon), not a second one asking to hurry.
    if (signal === state.signalAt?.signal && Date.now() - state.signalAt.at < SAME_SIGNAL_MS) return;
    // A second signal during the drain.
    if (appListens) current.hurry();
    else endBy(signal);
    return;
  }
  if (state.exitLayerRan) return; // the process is already exiting
  state.signalAt = { signal, at: Date.now() };
  // From here the application's work refused for the shutdown is let go (exitLayer.ts).
  const run = startShutdown(true, signal);
  const end = () => {
    // The application's handler decides. devexit's listeners go: its work is done, and a handler
    // that raises the signal again once it cleaned up (terminus does) must end the process by
    // it, not reach devexit's listener (the process then ended with code 0 when idle).
    if (appListens) return removeAll();
    // One more turn of the loop first: completions already delivered settle their promises.
    setImmediate(() => endBy(signal));
  };
  run.promise.then(end, end);
}
