import { writeSync } from 'node:fs';
import type { DeviceId } from './deviceId.js';
import { coreState } from './state.js';
import type { CloseReportEntry, ExitEvent } from './types.js';

export type { DevexitLogger, ExitEvent } from './types.js';

/**
 * What devexit tells tracing tools and people: diagnostics_channel messages, NODE_DEBUG=devexit
 * lines (util.debuglog) and warnings (the configure({ logger }) function, else process warnings,
 * written synchronously to stderr at exit). node:diagnostics_channel and node:util are loaded on
 * first use, not when @devexit/core is required.
 */

/** The diagnostics_channel names devexit publishes on (payloads: see the README). */
export const CHANNELS = Object.freeze({
  /** A service's close was registered: { device, service, registry: 'js' | 'native' }. */
  register: 'devexit:service:register',
  /** A close ran (while JS runs): a CloseReportEntry (device, service, layer, ms, outcome, ...). */
  close: 'devexit:service:close',
  /** Closing for an exit or a shutdown began: { layer, code?, signal? }. */
  exitStart: 'devexit:exit:start',
  /** It ended: { layer, code?, signal?, ms, closes, failures }. */
  exitEnd: 'devexit:exit:end',
} as const);

type ChannelName = keyof typeof CHANNELS;
type DiagnosticsChannel = typeof import('node:diagnostics_channel');
type Debug = ((format: string, ...args: unknown[]) => void) & { enabled?: boolean };

let dc: DiagnosticsChannel | null | undefined;
let debugFn: Debug | null | undefined;
let modulesSeen = -1;

/**
 * node:diagnostics_channel, once someone loaded it: nobody can have subscribed before, and
 * loading it costs about 0.1 ms, at exit too. The list of loaded modules only grows: it is
 * searched again only when it did.
 */
function diagnostics(): DiagnosticsChannel | undefined {
  if (dc === undefined) {
    const loaded = (process as { moduleLoadList?: string[] }).moduleLoadList;
    if (Array.isArray(loaded)) {
      if (loaded.length === modulesSeen) return undefined;
      modulesSeen = loaded.length;
      if (!loaded.includes('NativeModule diagnostics_channel')) return undefined;
    }
    try {
      dc = require('node:diagnostics_channel') as DiagnosticsChannel;
    } catch {
      dc = null;
    }
  }
  return dc ?? undefined;
}

function subscribed(name: ChannelName): boolean {
  try {
    return diagnostics()?.hasSubscribers(CHANNELS[name]) === true;
  } catch {
    return false;
  }
}

/** NODE_DEBUG=devexit's logger, or undefined when that section is off. */
function debug(): Debug | undefined {
  if (debugFn === undefined) {
    // util.debuglog reads NODE_DEBUG (comma-separated names, * wildcards): without a mention of
    // devexit (or a wildcard) it is off, and node:util need not be loaded to learn it.
    const sections = process.env.NODE_DEBUG;
    if (!sections || !/devexit|\*/i.test(sections)) {
      debugFn = null;
      return undefined;
    }
    try {
      const fn = (require('node:util') as typeof import('node:util')).debuglog('devexit') as Debug;
      // Old runtimes without `enabled`: the function is a no-op when off.
      debugFn = fn.enabled === false ? null : fn;
    } catch {
      debugFn = null;
    }
  }
  return debugFn ?? undefined;
}

/** Someone listens: a subscriber on `name`, or NODE_DEBUG=devexit. */
export function observed(name: ChannelName): boolean {
  return debug() !== undefined || subscribed(name);
}

function publish(name: ChannelName, message: () => object): void {
  if (!subscribed(name)) return;
  try {
    diagnostics()?.channel(CHANNELS[name]).publish(message());
  } catch {
    // A subscriber's throw is reported by Node itself (as uncaught): the close goes on.
  }
}

function log(text: string): void {
  const d = debug();
  if (!d) return;
  try {
    d('%s', text);
  } catch {
    // stderr gone: nothing to tell.
  }
}

const serviceName = (device: { type: string; index: number }, service: string) =>
  `${device.type}:${device.index}/${service}`;

function typeName(type: number): string {
  const name = coreState().namesByType.get(type);
  if (name) return name;
  const builtin = ['', 'cpu', 'cuda', 'hip', 'wgpu'][type];
  return builtin || `type${type}`;
}

/**
 * A service's close is now registered: `registry` 'js' (closeAtExit) or 'native' (a backend's
 * native service, told by its JS layer when it starts one). For backends; publishes on
 * devexit:service:register and logs a NODE_DEBUG=devexit line.
 */
export function reportRegistered(device: DeviceId, service: string, registry: 'js' | 'native'): void {
  if (!observed('register')) return;
  const id = { type: typeName(device.type), typeId: device.type, index: device.index };
  publish('register', () => ({ device: id, service, registry }));
  log(`register ${serviceName(id, service)} (${registry})`);
}

/** A close ran: devexit:service:close and a NODE_DEBUG line. */
export function reportClosed(entry: CloseReportEntry): void {
  publish('close', () => ({ ...entry, device: { ...entry.device } }));
  if (!debug()) return;
  let text = `close ${serviceName(entry.device, entry.service)} ${entry.outcome} in ${entry.ms.toFixed(2)} ms (${entry.layer})`;
  if (entry.drained !== undefined)
    text += entry.drained ? ', drained' : `, not drained${entry.dropped ? `: ${entry.dropped} dropped` : ''}`;
  if (entry.error) text += `: ${entry.error}`;
  log(text);
}

export function reportExitStart(event: ExitEvent): void {
  publish('exitStart', () => ({ ...event }));
  if (debug()) log(`${event.layer} begins${describeExit(event)}`);
}

export function reportExitEnd(event: ExitEvent, ms: number, entries: readonly CloseReportEntry[]): void {
  if (!observed('exitEnd')) return;
  const failures = entries.filter((e) => e.outcome !== 'ok').length;
  publish('exitEnd', () => ({ ...event, ms, closes: entries.length, failures }));
  if (debug())
    log(
      `${event.layer} ends in ${ms.toFixed(2)} ms: ${entries.length} close(s), ${failures} not ok${describeExit(event)}`,
    );
}

function describeExit(event: ExitEvent): string {
  if (event.signal) return ` (signal ${event.signal})`;
  return event.code !== undefined ? ` (code ${event.code})` : '';
}

// ---- warnings ----

/** A DevexitWarning with a code (DEVEXIT_SETTING, DEVEXIT_LAYER_NOT_ARMED, ...). */
export function devexitWarning(message: string, code: string): Error & { code: string } {
  const w = new Error(message) as Error & { code: string };
  w.name = 'DevexitWarning';
  w.code = code;
  return w;
}

export function writeStderr(text: string): void {
  try {
    writeSync(2, text);
  } catch {
    // stderr closed: nothing to report to.
  }
}

/**
 * Gives a warning to the configured logger; without one, to process.emitWarning, or at exit
 * (where an emitted warning would never print) straight to stderr as `line` (default: the
 * message).
 */
export function warn(warning: Error, options: { atExit?: boolean; line?: string } = {}): void {
  const logger = coreState().logger;
  if (logger) {
    try {
      logger(warning);
    } catch {
      // A throwing logger must not stop a close: the warning is lost.
    }
    return;
  }
  if (options.atExit || coreState().exitLayerRan) {
    writeStderr(`${options.line ?? `${warning.name}: ${warning.message}`}\n`);
    return;
  }
  try {
    process.emitWarning(warning);
  } catch {
    writeStderr(`${warning.name}: ${warning.message}\n`);
  }
}
