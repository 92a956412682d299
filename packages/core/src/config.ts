import { describe } from './deviceId.js';
import { coreState } from './state.js';

export type OnTimeout = 'exit' | 'warn';

export interface DevexitConfig {
  /** Bound on closing everything at exit, in ms. Default 3000, or DEVEXIT_TIMEOUT_MS. */
  timeoutMs?: number;
  /**
   * Past the deadline: 'exit' (default) warns, flushes stdio and ends the process with its exit
   * code, skipping library teardown that would crash under still-running services; 'warn' warns
   * and lets teardown go on. Or DEVEXIT_ON_TIMEOUT.
   */
  onTimeout?: OnTimeout;
}

export const DEFAULT_TIMEOUT_MS = 3000;
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

export function configure(config: DevexitConfig): Required<DevexitConfig> {
  if (typeof config !== 'object' || config === null) {
    throw new TypeError(
      `devexit: configure() takes an object { timeoutMs, onTimeout }; got ${describe(config)}`,
    );
  }
  const { timeoutMs, onTimeout } = config;
  if (
    timeoutMs !== undefined &&
    (typeof timeoutMs !== 'number' ||
      !Number.isInteger(timeoutMs) ||
      timeoutMs < 1 ||
      timeoutMs > MAX_TIMEOUT_MS)
  ) {
    throw new TypeError(
      `devexit: timeoutMs must be an integer in 1..${MAX_TIMEOUT_MS}; got ${describe(timeoutMs)}`,
    );
  }
  if (onTimeout !== undefined && onTimeout !== 'exit' && onTimeout !== 'warn') {
    throw new TypeError(`devexit: onTimeout must be 'exit' or 'warn'; got ${describe(onTimeout)}`);
  }
  const state = coreState();
  if (timeoutMs !== undefined) state.config.timeoutMs = timeoutMs;
  if (onTimeout !== undefined) state.config.onTimeout = onTimeout;
  state.native?.configure(timeoutMs, onTimeout);
  return { ...state.config };
}

export function currentConfig(): Required<DevexitConfig> {
  return { ...coreState().config };
}

export function configFromEnv(env: NodeJS.ProcessEnv): Required<DevexitConfig> {
  const config: Required<DevexitConfig> = { timeoutMs: DEFAULT_TIMEOUT_MS, onTimeout: 'exit' };
  const t = env.DEVEXIT_TIMEOUT_MS;
  if (t !== undefined && /^[1-9][0-9]*$/.test(t) && Number(t) <= MAX_TIMEOUT_MS) config.timeoutMs = Number(t);
  if (env.DEVEXIT_ON_TIMEOUT === 'warn') config.onTimeout = 'warn';
  return config;
}
