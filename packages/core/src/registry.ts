import { writeSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';
import { checkDeviceId, checkName, type DeviceId, describe, deviceTypeName } from './deviceId.js';
import { exitingError, ServiceCloseError } from './errors.js';
import { type CloseReportEntry, formatReportLine } from './report.js';
import { coreState, type JsEntry, type NativeBridge } from './state.js';

const key = (type: number, index: number, service: string) => `${type}:${index}:${service}`;

/**
 * Registers `close` for (device, serviceType), to run once before native runtimes tear down at
 * exit (or on closeServices()). Once per key: a later call for the same key is a no-op and
 * returns false. Throws ERR_DEVEXIT_EXITING once the process is exiting.
 *
 * The close runs synchronously on the JS thread (in the 'exit' event at exit): it must not
 * need the event loop. Native services register through devexit.h instead.
 */
export function closeAtExit(device: DeviceId, serviceType: string, close: () => void): boolean {
  const id = checkDeviceId(device, 'device');
  checkName(serviceType, 'serviceType');
  if (typeof close !== 'function') {
    throw new TypeError(`devexit: close must be a function; got ${describe(close)}`);
  }
  const state = coreState();
  if (isExiting())
    throw exitingError(`register a close for ${deviceTypeName(id.type)}:${id.index}/${serviceType}`);
  const k = key(id.type, id.index, serviceType);
  if (state.entries.has(k)) return false;
  state.entries.set(k, { type: id.type, index: id.index, service: serviceType, close, seq: ++state.seq });
  installExitListener();
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
  const nativeDropped = state.native ? state.native.forget(id.type, id.index, serviceType) === 0 : false;
  return dropped || nativeDropped;
}

/**
 * True once the process began closing services for exit (or after closeServices()). Reads the
 * native flag through a typed-array view: no call into native code.
 */
export function isExiting(): boolean {
  const state = coreState();
  if (state.exiting) return true;
  const native = state.native;
  if (native === undefined) return false;
  const view = native.exitingView;
  return view !== undefined ? Atomics.load(view, 0) !== 0 : native.isExiting();
}

export interface CloseServicesOptions {
  /** Also refuse later registrations (the default: this is a shutdown). */
  final?: boolean;
}

/**
 * Closes every registered service now, JS and native, and returns what ran. For graceful
 * shutdown and tests. Failures are emitted as process warnings (ServiceCloseError).
 */
export function closeServices(options: CloseServicesOptions = {}): CloseReportEntry[] {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`devexit: closeServices() takes an options object; got ${describe(options)}`);
  }
  const final = options.final ?? true;
  const entries = runCloses('explicit', final, undefined);
  for (const e of entries) {
    if (e.outcome !== 'ok') {
      const device = { type: e.device.typeId, index: e.device.index };
      process.emitWarning(new ServiceCloseError(device, e.service, new Error(e.error ?? e.outcome)));
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

/** Called by @devexit/native when it loads. */
export function installNativeBridge(bridge: NativeBridge): void {
  const state = coreState();
  if (state.native) return;
  state.native = bridge;
  bridge.configure(state.config.timeoutMs, state.config.onTimeout);
  for (const [name, type] of state.typesByName) {
    if (type >= 16) state.typesByName.set(name, bridge.deviceType(name));
  }
  installExitListener();
}

function runCloses(layer: string, markExiting: boolean, exitCode: number | undefined): CloseReportEntry[] {
  const state = coreState();
  if (markExiting) state.exiting = true;
  const out: CloseReportEntry[] = [];
  const native = state.native;
  // Native closes only from the main thread: a worker's exit must not close process-wide services.
  if (native && (isMainThread || layer === 'explicit')) {
    if (layer === 'explicit') {
      const before = native.report().length;
      native.closeAll(layer, markExiting, exitCode);
      out.push(...native.report().slice(before));
    } else {
      // At exit nobody reads the entries: the native side prints what DEVEXIT_REPORT asks for.
      native.closeAll(layer, markExiting, exitCode);
    }
  }
  out.push(...runJsCloses(layer));
  return out;
}

function runJsCloses(layer: string): CloseReportEntry[] {
  const state = coreState();
  if (state.closing) return [];
  const taken: JsEntry[] = [...state.entries.values()];
  state.entries.clear();
  // Devices in registration order of their first service; services last-registered-first.
  taken.sort((a, b) => a.type - b.type || a.index - b.index || b.seq - a.seq);
  state.closing = true;
  const out: CloseReportEntry[] = [];
  try {
    for (const e of taken) {
      const start = performance.now();
      let error: string | undefined;
      try {
        e.close();
      } catch (err) {
        error = err instanceof Error ? err.message : String(err);
      }
      const ms = performance.now() - start;
      const entry: CloseReportEntry = {
        device: { type: deviceTypeName(e.type), typeId: e.type, index: e.index },
        service: e.service,
        layer,
        ms,
        outcome: error !== undefined ? 'error' : ms > state.config.timeoutMs ? 'timeout' : 'ok',
        pid: process.pid,
      };
      if (error !== undefined) entry.error = error;
      out.push(entry);
    }
  } finally {
    state.closing = false;
  }
  state.report.push(...out);
  if (layer !== 'explicit') {
    // At exit, process.emitWarning would never print: write synchronously.
    let text = '';
    for (const e of out) {
      if (e.outcome === 'error')
        text += `devexit: close of ${e.device.type}:${e.device.index}/${e.service} failed: ${e.error}\n`;
      if (state.reportMode !== 'off') text += `${formatReportLine(e, state.reportMode)}\n`;
    }
    if (text) writeStderr(text);
  }
  return out;
}

function writeStderr(text: string): void {
  try {
    writeSync(2, text);
  } catch {
    // stderr closed: nothing to report to.
  }
}

function onExit(code: number): void {
  const state = coreState();
  const layer = isMainThread ? 'js-exit' : 'worker-exit';
  const jsEnabled = state.native ? state.native.jsLayerEnabled : !state.guardDisabled;
  if (!jsEnabled) return;
  runCloses(layer, true, typeof code === 'number' ? code : 0);
}

function installExitListener(): void {
  const state = coreState();
  if (state.listenerInstalled) return;
  state.listenerInstalled = true;
  // Runs before Node joins its threadpool and disposes the platform (process.exit, uncaught
  // errors, natural end); the native layers cover the paths that skip it.
  process.on('exit', onExit);
}
