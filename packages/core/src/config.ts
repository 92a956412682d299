import type { DevexitLogger } from './diagnostics.js';
import { mainThread } from './exitLayer.js';
import {
  DEFAULT_TIMEOUT_MS,
  type OnTimeout,
  realmSettings,
  type Settings,
  SHUTDOWN_SIGNALS,
  type ShutdownSignal,
  settings,
  TIMEOUT_MS_RANGE,
} from './settings.js';
import { installSignals } from './signals.js';
import { coreState, type SettingsUpdate } from './state.js';
import { checkInteger, checkOptions, invalidType, invalidValue } from './validate.js';

export { DEFAULT_TIMEOUT_MS, type OnTimeout };

const KEYS = ['timeoutMs', 'onTimeout', 'signals', 'logger'];

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
}

/** What configure() and currentConfig() return: the settings in force. */
export interface CurrentConfig {
  timeoutMs: number;
  onTimeout: OnTimeout;
  signals: readonly ShutdownSignal[];
}

/**
 * Sets the deadline and what happens past it, for the whole process (with @devexit/native: every
 * realm and every installed copy). Validates everything first: a bad value throws a typed error
 * (ERR_INVALID_ARG_TYPE, ERR_INVALID_ARG_VALUE, ERR_OUT_OF_RANGE) and changes nothing.
 */
export function configure(config: DevexitConfig): CurrentConfig {
  if (config === undefined)
    throw invalidType('configure() options', `an object { ${KEYS.join(', ')} }`, config);
  const o = checkOptions(config, 'configure() options', KEYS);
  const timeoutMs =
    o.timeoutMs === undefined
      ? undefined
      : checkInteger(o.timeoutMs, 'timeoutMs', TIMEOUT_MS_RANGE.min, TIMEOUT_MS_RANGE.max);
  const onTimeout = o.onTimeout;
  if (onTimeout !== undefined && onTimeout !== 'exit' && onTimeout !== 'warn') {
    throw invalidValue('onTimeout', "'exit' or 'warn'", onTimeout);
  }
  const signals = o.signals === undefined ? undefined : checkSignals(o.signals);
  const logger = o.logger;
  if (logger !== undefined && logger !== null && typeof logger !== 'function')
    throw invalidType('logger', 'a function or null', logger);

  const state = coreState();
  // First: the warnings of the settings parsed below go to it.
  if (logger !== undefined) state.logger = (logger as DevexitLogger | null) ?? undefined;
  const update: SettingsUpdate = { origin: 'api', ...state.configured };
  if (timeoutMs !== undefined) {
    update.timeoutMs = timeoutMs;
    update.timeoutSource = `configure({ timeoutMs: ${timeoutMs} })`;
  }
  if (onTimeout !== undefined) {
    update.onTimeout = onTimeout;
    update.onTimeoutSource = `configure({ onTimeout: '${onTimeout}' })`;
  }
  state.configured = update;
  const realm = realmSettings();
  state.settings = Object.freeze({
    ...realm,
    timeoutMs: update.timeoutMs ?? realm.timeoutMs,
    onTimeout: update.onTimeout ?? realm.onTimeout,
    signals: signals ?? realm.signals,
    sources: Object.freeze({
      timeoutMs: update.timeoutSource ?? realm.sources.timeoutMs,
      onTimeout: update.onTimeoutSource ?? realm.sources.onTimeout,
    }),
  }) satisfies Settings;
  state.native?.applySettings(update);
  if (signals !== undefined) applySignals(signals);
  return currentConfig();
}

function checkSignals(value: unknown): readonly ShutdownSignal[] {
  const expected = `an array of ${SHUTDOWN_SIGNALS.map((s) => `'${s}'`).join(', ')}`;
  if (!Array.isArray(value)) throw invalidType('signals', expected, value);
  for (const s of value) {
    if (!SHUTDOWN_SIGNALS.includes(s)) throw invalidValue('signals', expected, s);
  }
  return Object.freeze([...new Set(value as ShutdownSignal[])]);
}

function applySignals(signals: readonly ShutdownSignal[]): void {
  // Signals reach the main thread only.
  if (mainThread()) installSignals(signals);
}

/** The deadline and policy in force (process-wide with @devexit/native), and this realm's signals. */
export function currentConfig(): CurrentConfig {
  const s = settings();
  return { timeoutMs: s.timeoutMs, onTimeout: s.onTimeout, signals: s.signals };
}
