import type { DevexitLogger } from './diagnostics.js';
import type { CloseReportEntry } from './report.js';
import type { Layers, OnTimeout, ReportMode, Settings } from './settings.js';

/** A settings update pushed into the native registry (see devexit_host.h). */
export interface SettingsUpdate {
  /** 'env': fills only what still has its default (the first copy to load decides); 'api': configure(). */
  origin: 'env' | 'api';
  timeoutMs?: number;
  onTimeout?: OnTimeout;
  layers?: Layers;
  report?: ReportMode;
  /** How warnings name the values: 'DEVEXIT_TIMEOUT_MS=500', 'configure({ timeoutMs: 500 })'. */
  timeoutSource?: string;
  onTimeoutSource?: string;
}

/** What @devexit/native plugs into core (see installNativeBridge). */
export interface NativeBridge {
  deviceType(name: string): number;
  isExiting(): boolean;
  /** A view of the native exiting flag, when the runtime allows external buffers. */
  exitingView: Uint32Array | undefined;
  /** Runs the native closes from this JS thread; exitCode: the exit's (a deadline may end it). */
  closeAll(layer: string, markExiting: boolean, exitCode?: number): number;
  applySettings(update: SettingsUpdate): void;
  /** The settings in force in the process (the registry owner's); signals are each realm's own. */
  settings(): Omit<Settings, 'signals'>;
  report(): CloseReportEntry[];
  forget(type: number, index: number, service: string): number;
  /** A JS close starts (main thread): the native watchdog bounds it by the deadline. exitCode < 0: explicit. */
  jsCloseBegin(layer: string, exitCode: number, type: number, index: number, service: string): void;
  /** It returned (or a nested exit abandoned it): true if past the deadline. */
  jsCloseEnd(): boolean;
  // ---- shutdown() (absent in older copies, or false/undefined when the registry's owner is one) ----
  /** Refuses new work process-wide; JS stays reachable for completions. */
  beginShutdown?(): boolean;
  /**
   * Every native close on a helper thread, layer 'shutdown': services finish their queues for up
   * to drainMs. Undefined when the owner cannot (then closeAll).
   */
  closeAsync?(layer: string, drainMs: number): Promise<CloseReportEntry[]> | undefined;
  /** Cuts every drain in progress short: what is left is dropped and closed. */
  hurryShutdown?(): void;
  /** The exit layers, as @devexit/native's guardState() tells them (for tools). */
  guardState?(): unknown;
  /** Whether this realm runs on the process's main thread (undefined: ask worker_threads). */
  isMainThread?(): boolean | undefined;
}

export interface JsEntry {
  type: number;
  index: number;
  service: string;
  close: () => unknown;
  seq: number;
  /** shutdown(): finishes the service's queued work first (closeAtExit's options.drain). */
  drain?: ((signal: AbortSignal) => unknown) | undefined;
}

/** A shutdown() in progress or done, in this realm. */
export interface ShutdownRun {
  promise: Promise<CloseReportEntry[]>;
  /** Skips the rest of the drain: what is left is dropped and closed. */
  hurry(): void;
  hurried: boolean;
  done: boolean;
  /** The signal that started it, if one did. */
  signal: string | undefined;
}

/** The JS closes being run, so that an exit called from inside one continues them. */
export interface CloseRun {
  layer: string;
  /** The code of the exit being closed for; undefined for closeServices(). */
  exitCode: number | undefined;
  markExiting: boolean;
  /** closeServices(): results are returned, not printed. */
  explicit: boolean;
  /** The native watchdog bounds each JS close (main thread, @devexit/native loaded). */
  watched: boolean;
  /** performance.now() past which a JS close counts as timed out (without the native watchdog). */
  deadline: number;
  /** DEVEXIT_REPORT in force: what the exit layer prints per close. */
  report: ReportMode;
  /** shutdown(): whether each JS close's drain finished before the deadline. */
  drained: Map<JsEntry, boolean> | undefined;
  queue: JsEntry[];
  next: number;
  current: JsEntry | undefined;
  currentStart: number;
  nativeDone: boolean;
  done: boolean;
  entries: CloseReportEntry[];
}

export interface CoreState {
  version: 3;
  entries: Map<string, JsEntry>;
  seq: number;
  exiting: boolean;
  run: CloseRun | undefined;
  /** The JS exit layer ran (or an exit continued a run) in this realm. */
  exitLayerRan: boolean;
  typesByName: Map<string, number>;
  namesByType: Map<number, string>;
  native: NativeBridge | undefined;
  /** This realm's settings (environment, then configure()); parsed on first use. */
  settings: Settings | undefined;
  /** What configure() set, pushed to the native registry when it loads. */
  configured: SettingsUpdate | undefined;
  warned: Set<string>;
  report: CloseReportEntry[];
  hooksInstalled: boolean;
  /** One per copy of core in this realm: refreshes that copy's isExiting() variables (exiting.ts). */
  syncs: Array<(state: CoreState) => void>;
  // Added later: a state made by an older copy lacks them (read with ?? / optional).
  /** shutdown() of this realm, once called. */
  shutdown?: ShutdownRun | undefined;
  /** configure({ logger }): every warning goes there. */
  logger?: DevexitLogger | undefined;
  /** The signal listeners devexit installed (signal -> listener). */
  signalListeners?: Map<string, (signal: NodeJS.Signals) => void>;
}

// @3: the shape changed (@2 had no syncs); an older core in the same realm keeps its own state.
const KEY = Symbol.for('@devexit/core/state@3');

let cached: CoreState | undefined;

/** One state per JS realm, shared by every copy of @devexit/core (of this shape) loaded into it. */
export function coreState(): CoreState {
  if (cached) return cached;
  const g = globalThis as unknown as Record<symbol, CoreState | undefined>;
  let state = g[KEY];
  if (!state) {
    state = {
      version: 3,
      entries: new Map(),
      seq: 0,
      exiting: false,
      run: undefined,
      exitLayerRan: false,
      typesByName: new Map(),
      namesByType: new Map(),
      native: undefined,
      settings: undefined,
      configured: undefined,
      warned: new Set(),
      report: [],
      hooksInstalled: false,
      syncs: [],
    };
    Object.defineProperty(globalThis, KEY, { value: state, enumerable: false });
  }
  cached = state;
  return state;
}
