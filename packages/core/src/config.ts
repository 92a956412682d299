import {
  DEFAULT_TIMEOUT_MS,
  realmSettings,
  SHUTDOWN_SIGNALS,
  settings,
  TIMEOUT_MS_RANGE,
  WORKERS_MODES,
} from './settings.js';
import { installSignals } from './signals.js';
import { coreState } from './state.js';
import { mainThread } from './thread.js';
import type {
  DevexitLogger,
  OnTimeout,
  Settings,
  SettingsUpdate,
  ShutdownSignal,
  WorkersMode,
} from './types.js';
import { checkInteger, checkOptions, invalidType, invalidValue } from './validate.js';
import { applyWorkersGuard } from './workersGuard.js';

export { DEFAULT_TIMEOUT_MS, type OnTimeout };

const KEYS = ['timeoutMs', 'onTimeout', 'signals', 'logger', 'workers'];

export interface DevexitConfig {
  /** Bound on closing everything at exit, JS closes included, in ms (1..2147483647). Default
   * 3000, or DEVEXIT_TIMEOUT_MS. */
  timeoutMs?: number;
  /**
   * Past the deadline: 'exit' (default) warns, flushes stdio and ends the process with its exit
   * code, skipping library teardown that would crash under still-running services; 'warn' warns
   * and lets teardown go on. Or DEVEXIT_ON_TIMEOUT.
   */
  onTimeout?: OnTimeout;
  /**
   * Signals on which the main thread runs shutdown() (drain, then close) and then ends by that
   * signal; [] for none (the default, or DEVEXIT_SIGNALS). This realm's own.
   */
  signals?: readonly ShutdownSignal[];
  /**
   * Receives every warning devexit gives (settings ignored, closes that failed, ...) instead of
   * process warnings (and, at exit, stderr). null: back to the default. This realm's own.
   */
  logger?: DevexitLogger | null;
  /**
   * 'guard': worker_threads' Worker.prototype.terminate, in this realm, becomes devexit's
   * terminate() (critical sections and the Worker's closes first); 'off' (the default, or
   * DEVEXIT_WORKERS) puts Node's back. This realm's own.
   */
  workers?: WorkersMode;
}

/** What configure() and currentConfig() return: the settings in force. */
export interface CurrentConfig {
  timeoutMs: number;
  onTimeout: OnTimeout;
  signals: readonly ShutdownSignal[];
  workers: WorkersMode;
}

/**
 * Sets the deadline and what happens past it, for the whole process (with @devexit/native: every
 * realm and every installed copy), and this realm's signals, logger and Worker guard. Reads each
 * option once and validates all of them first: a bad value throws a typed error
 * (ERR_INVALID_ARG_TYPE, ERR_INVALID_ARG_VALUE, ERR_OUT_OF_RANGE) and changes nothing.
 */
export function configure(config: DevexitConfig): CurrentConfig {
  if (config === undefined)
    throw invalidType('configure() options', `an object { ${KEYS.join(', ')} }`, config);
  const o = checkOptions(config, 'configure() options', KEYS);
  // Each option read once: a getter cannot answer differently between the check and the use.
  const { timeoutMs: t, onTimeout, signals: s, logger, workers } = o;
  const timeoutMs =
    t === undefined ? undefined : checkInteger(t, 'timeoutMs', TIMEOUT_MS_RANGE.min, TIMEOUT_MS_RANGE.max);
  if (onTimeout !== undefined && onTimeout !== 'exit' && onTimeout !== 'warn') {
    throw invalidValue('onTimeout', "'exit' or 'warn'", onTimeout);
  }
  const signals = s === undefined ? undefined : checkSignals(s);
  if (logger !== undefined && logger !== null && typeof logger !== 'function')
    throw invalidType('logger', 'a function or null', logger);
  if (workers !== undefined && !WORKERS_MODES.includes(workers as WorkersMode))
    throw invalidValue('workers', "'off' or 'guard'", workers);

  const state = coreState();
  // First: the warnings of the settings parsed below go to it.
  if (logger !== undefined) state.logger = (logger as DevexitLogger | null) ?? undefined;
  const update: SettingsUpdate = { origin: 'api', ...state.configured };
  if (timeoutMs !== undefined) {
    update.timeoutMs = timeoutMs;
    update.timeoutSource = `configure({ timeoutMs: ${timeoutMs} })`;
  }
  if (onTimeout !== undefined) {
    update.onTimeout = onTimeout as OnTimeout;
    update.onTimeoutSource = `configure({ onTimeout: '${onTimeout}' })`;
  }
  state.configured = update;
  const realm = realmSettings();
  state.settings = Object.freeze({
    ...realm,
    timeoutMs: update.timeoutMs ?? realm.timeoutMs,
    onTimeout: update.onTimeout ?? realm.onTimeout,
    signals: signals ?? realm.signals,
    workers: (workers as WorkersMode | undefined) ?? realm.workers,
    sources: Object.freeze({
      timeoutMs: update.timeoutSource ?? realm.sources.timeoutMs,
      onTimeout: update.onTimeoutSource ?? realm.sources.onTimeout,
    }),
  }) satisfies Settings;
  state.native?.applySettings(update);
  // Signals reach the main thread only.
  if (signals !== undefined && mainThread()) installSignals(signals);
  if (workers !== undefined) applyWorkersGuard();
  return currentConfig();
}

/** A copy made once (by index: an array's own iterator is not trusted), then checked. */
function checkSignals(value: unknown): readonly ShutdownSignal[] {
  const expected = `an array of ${SHUTDOWN_SIGNALS.map((s) => `'${s}'`).join(', ')}`;
  if (!Array.isArray(value)) throw invalidType('signals', expected, value);
  const copy: unknown[] = [];
  const n = value.length;
  for (let i = 0; i < n; i++) copy.push(value[i]);
  const out: ShutdownSignal[] = [];
  for (const s of copy) {
    if (typeof s !== 'string' || !SHUTDOWN_SIGNALS.includes(s as ShutdownSignal))
      throw invalidValue('signals', expected, s);
    if (!out.includes(s as ShutdownSignal)) out.push(s as ShutdownSignal);
  }
  return Object.freeze(out);
}

/** The deadline and policy in force (process-wide with @devexit/native), and this realm's signals and Worker guard. */
export function currentConfig(): CurrentConfig {
  const s = settings();
  return { timeoutMs: s.timeoutMs, onTimeout: s.onTimeout, signals: s.signals, workers: s.workers };
}
