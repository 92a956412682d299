import { configFromEnv, type DevexitConfig } from './config.js';
import { type CloseReportEntry, type ReportMode, reportModeFromEnv } from './report.js';

/** What @devexit/native plugs into core (see installNativeBridge). */
export interface NativeBridge {
  deviceType(name: string): number;
  isExiting(): boolean;
  /** A view of the native exiting flag, when the runtime allows external buffers. */
  exitingView: Uint32Array | undefined;
  closeAll(layer: string, markExiting: boolean, exitCode?: number): number;
  configure(timeoutMs: number | undefined, onTimeout: 'exit' | 'warn' | undefined): void;
  report(): CloseReportEntry[];
  forget(type: number, index: number, service: string): number;
  /** The JS exit layer is enabled (not disabled by DEVEXIT_GUARD / DEVEXIT_LAYERS). */
  jsLayerEnabled: boolean;
}

export interface JsEntry {
  type: number;
  index: number;
  service: string;
  close: () => void;
  seq: number;
}

export interface CoreState {
  version: 1;
  entries: Map<string, JsEntry>;
  seq: number;
  exiting: boolean;
  closing: boolean;
  typesByName: Map<string, number>;
  namesByType: Map<number, string>;
  native: NativeBridge | undefined;
  config: Required<DevexitConfig>;
  report: CloseReportEntry[];
  reportMode: ReportMode;
  listenerInstalled: boolean;
  guardDisabled: boolean;
}

const KEY = Symbol.for('@devexit/core/state@1');

let cached: CoreState | undefined;

/** One state per JS realm, shared by every copy of @devexit/core loaded into it. */
export function coreState(): CoreState {
  if (cached) return cached;
  const g = globalThis as unknown as Record<symbol, CoreState | undefined>;
  let state = g[KEY];
  if (!state) {
    state = createState();
    Object.defineProperty(globalThis, KEY, { value: state, enumerable: false });
  }
  cached = state;
  return state;
}

function createState(): CoreState {
  const guard = process.env.DEVEXIT_GUARD;
  return {
    version: 1,
    entries: new Map(),
    seq: 0,
    exiting: false,
    closing: false,
    typesByName: new Map(),
    namesByType: new Map(),
    native: undefined,
    config: configFromEnv(process.env),
    report: [],
    reportMode: reportModeFromEnv(process.env.DEVEXIT_REPORT),
    listenerInstalled: false,
    guardDisabled: guard === '0' || guard === 'off' || guard === 'false',
  };
}
