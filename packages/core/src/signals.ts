import type { ShutdownSignal } from './settings.js';
import { startShutdown } from './shutdown.js';
import { coreState } from './state.js';

/**
 * Opt-in signals (configure({ signals }), DEVEXIT_SIGNALS), on the main thread: the first one
 * runs shutdown() with drain, then the process ends by that signal (the listener is removed and
 * the signal raised again, so a shell sees 128 + its number: 130, 143). A second one skips the
 * rest of the drain. With a listener of the application's own on that signal, devexit only
 * drains and closes: the application decides how the process ends.
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
  const state = coreState();
  if (!state.signalListeners) state.signalListeners = new Map();
  const listeners = state.signalListeners;
  for (const [signal, listener] of listeners) {
    if (signals.includes(signal as ShutdownSignal)) continue;
    process.removeListener(signal, listener);
    listeners.delete(signal);
  }
  for (const signal of signals) {
    if (listeners.has(signal)) continue;
    process.on(signal, onSignal);
    listeners.set(signal, onSignal);
  }
}

function removeAll(): void {
  const listeners = coreState().signalListeners;
  if (!listeners) return;
  for (const [signal, listener] of listeners) process.removeListener(signal, listener);
  listeners.clear();
}

function onSignal(signal: NodeJS.Signals): void {
  const state = coreState();
  const current = state.shutdown;
  if (current && !current.done && current.signal !== undefined) {
    // A second signal: stop waiting for the drain; the first one's end follows.
    current.hurry();
    return;
  }
  if (state.exitLayerRan) return; // the process is already exiting
  const run = startShutdown(true, signal);
  const end = () => {
    // The application listens to this signal too (now, or since before): it decides.
    if (process.listenerCount(signal) > 1) return;
    removeAll();
    if (process.listenerCount(signal) > 0) return;
    // One more turn of the loop first: completions already delivered settle their promises.
    setImmediate(() => {
      process.kill(process.pid, signal);
      setTimeout(() => process.exit(128 + signalNumber(signal)), FALLBACK_EXIT_MS);
    });
  };
  run.promise.then(end, end);
}
