import { runCloses } from './closeRun.js';
import { checkDeviceId, checkName, type DeviceId, deviceTypeName } from './deviceId.js';
import { reportRegistered, warn } from './diagnostics.js';
import { exitingError, ServiceCloseError } from './errors.js';
import { isExiting, syncCopies } from './exiting.js';
import { installExitHooks } from './exitLayer.js';
import { realmSettings } from './settings.js';
import { installSignals } from './signals.js';
import { coreState } from './state.js';
import { mainThread } from './thread.js';
import { publishNeeds } from './threads.js';
import type { CloseReportEntry, NativeBridge } from './types.js';
import { checkOptions, invalidType } from './validate.js';

/**
 * The exit layer's hooks, once per realm, and DEVEXIT_SIGNALS from the first registration on
 * (none set, the usual case: nothing to listen to, and no need to ask which thread this is).
 */
export function armExit(): void {
  const state = coreState();
  if (state.hooksInstalled) return;
  installExitHooks();
  const { signals } = realmSettings();
  if (signals.length > 0 && state.signalListeners.size === 0 && mainThread()) installSignals(signals);
}

const key = (type: number, index: number, service: string) => `${type}:${index}:${service}`;

export interface CloseAtExitOptions {
  /**
   * For shutdown(): finishes the service's queued work (settling its promises with their
   * results) before `close` runs. May return a promise; it is awaited until the deadline, or
   * until `signal` aborts (the drain was cut short: stop waiting). Exits never call it.
   */
  drain?: (signal: AbortSignal) => unknown;
}

/**
 * Registers `close` for (device, serviceType), to run once before native runtimes tear down at
 * exit (or on closeServices() or shutdown()). Once per key: a later call for the same key is a
 * no-op and returns false. Throws ERR_DEVEXIT_EXITING once the process is exiting.
 *
 * The close runs synchronously on the JS thread, before the application's 'exit' listeners: it
 * must not need the event loop. A close that returns a promise is reported as an error (nothing
 * awaits it at exit). Native services register through devexit.h instead.
 */
export function closeAtExit(
  device: DeviceId,
  serviceType: string,
  close: () => void,
  options?: CloseAtExitOptions,
): boolean {
  const id = checkDeviceId(device, 'device');
  checkName(serviceType, 'serviceType');
  if (typeof close !== 'function') throw invalidType('close', 'a function', close);
  const o = checkOptions(options, 'closeAtExit() options', ['drain']);
  const drainOption = o.drain;
  if (drainOption !== undefined && typeof drainOption !== 'function')
    throw invalidType('drain', 'a function', drainOption);
  const state = coreState();
  if (isExiting())
    throw exitingError(`register a close for ${deviceTypeName(id.type)}:${id.index}/${serviceType}`);
  const k = key(id.type, id.index, serviceType);
  if (state.entries.has(k)) return false;
  const drain = drainOption as CloseAtExitOptions['drain'];
  state.entries.set(k, {
    type: id.type,
    index: id.index,
    service: serviceType,
    close,
    seq: ++state.seq,
    drain,
  });
  publishNeeds();
  armExit();
  reportRegistered(id, serviceType, 'js');
  return true;
}

/**
 * Drops a registration after the user closed the service explicitly, so exit skips it. Looks in
 * the JS registry and, when loaded, the native one. Returns true if something was dropped.
 */
export function forgetClose(device: DeviceId, serviceType: string): boolean {
  const id = checkDeviceId(device, 'device');
  checkName(serviceType, 'serviceType');
  const state = coreState();
  const dropped = state.entries.delete(key(id.type, id.index, serviceType));
  if (dropped) publishNeeds();
  const nativeDropped = state.native ? state.native.forget(id.type, id.index, serviceType) === 0 : false;
  return dropped || nativeDropped;
}

export interface CloseServicesOptions {
  /** Also refuse later registrations (the default: this is a shutdown). */
  final?: boolean;
}

/**
 * Closes every registered service now, JS and native, dropping queued work, and returns what
 * ran (shutdown() drains first). For tests and abrupt shutdowns. Failures are emitted as process warnings (ServiceCloseError). Options are
 * checked before anything changes (ERR_INVALID_ARG_TYPE, ERR_INVALID_ARG_VALUE). Called from
 * inside a close, it does nothing (the closes are already running).
 */
export function closeServices(options?: CloseServicesOptions): CloseReportEntry[] {
  const o = checkOptions(options, 'closeServices() options', ['final']);
  const final = o.final;
  if (final !== undefined && typeof final !== 'boolean') throw invalidType('final', 'a boolean', final);
  const state = coreState();
  if (state.run && !state.run.done) return [];
  // During shutdown(): its closes are the ones; close now instead of draining.
  const shutdown = state.shutdown;
  if (shutdown && !shutdown.done) {
    shutdown.hurry();
    return [];
  }
  const entries = runCloses({
    layer: 'explicit',
    markExiting: final ?? true,
    unbounded: true,
    nativeCloses: true,
  });
  for (const e of entries) {
    if (e.outcome !== 'ok') {
      const device = { type: e.device.typeId, index: e.device.index };
      warn(new ServiceCloseError(device, e.service, new Error(e.error ?? e.outcome)));
    }
  }
  return entries;
}

/** Every close that ran in this process so far (this realm's JS closes and all native ones). */
export function getCloseReport(): CloseReportEntry[] {
  const state = coreState();
  const native = state.native ? state.native.report() : [];
  return [...state.report, ...native];
}

/**
 * Called by @devexit/native when it loads: pushes this realm's settings into the process-wide
 * registry (the environment's fill only what is still default; configure()'s always apply).
 */
export function installNativeBridge(bridge: NativeBridge): void {
  const state = coreState();
  if (state.native) return;
  const realm = realmSettings();
  bridge.applySettings({
    origin: 'env',
    timeoutMs: realm.timeoutMs,
    onTimeout: realm.onTimeout,
    layers: realm.layers,
    report: realm.report,
    timeoutSource: realm.sources.timeoutMs,
    onTimeoutSource: realm.sources.onTimeout,
  });
  if (state.configured) bridge.applySettings(state.configured);
  state.native = bridge;
  syncCopies(state);
  for (const [name, type] of state.typesByName) {
    if (type >= 16) state.typesByName.set(name, bridge.deviceType(name));
  }
  armExit();
}
