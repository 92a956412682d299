import {
  DEFAULT_TIMEOUT_MS,
  type OnTimeout,
  realmSettings,
  type Settings,
  settings,
  TIMEOUT_MS_RANGE,
} from './settings.js';
import { coreState, type SettingsUpdate } from './state.js';
import { checkInteger, checkOptions, invalidType, invalidValue } from './validate.js';

export { DEFAULT_TIMEOUT_MS, type OnTimeout };

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
}

/**
 * Sets the deadline and what happens past it, for the whole process (with @devexit/native: every
 * realm and every installed copy). Validates everything first: a bad value throws a typed error
 * (ERR_INVALID_ARG_TYPE, ERR_INVALID_ARG_VALUE, ERR_OUT_OF_RANGE) and changes nothing.
 */
export function configure(config: DevexitConfig): Required<DevexitConfig> {
  if (config === undefined)
    throw invalidType('configure() options', 'an object { timeoutMs, onTimeout }', config);
  const o = checkOptions(config, 'configure() options', ['timeoutMs', 'onTimeout']);
  const timeoutMs =
    o.timeoutMs === undefined
      ? undefined
      : checkInteger(o.timeoutMs, 'timeoutMs', TIMEOUT_MS_RANGE.min, TIMEOUT_MS_RANGE.max);
  const onTimeout = o.onTimeout;
  if (onTimeout !== undefined && onTimeout !== 'exit' && onTimeout !== 'warn') {
    throw invalidValue('onTimeout', "'exit' or 'warn'", onTimeout);
  }

  const state = coreState();
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
    sources: Object.freeze({
      timeoutMs: update.timeoutSource ?? realm.sources.timeoutMs,
      onTimeout: update.onTimeoutSource ?? realm.sources.onTimeout,
    }),
  }) satisfies Settings;
  state.native?.applySettings(update);
  return currentConfig();
}

/** The deadline and policy in force (process-wide with @devexit/native). */
export function currentConfig(): Required<DevexitConfig> {
  const s = settings();
  return { timeoutMs: s.timeoutMs, onTimeout: s.onTimeout };
}
