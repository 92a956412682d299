import type {
  CloseReportEntry,
  DevexitLogger,
  NativeBridge,
  ReportMode,
  Settings,
  SettingsUpdate,
} from './types.js';

export type { NativeBridge, SettingsUpdate } from './types.js';

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
  /** The code of the exit being closed for; undefined for closeServices() and shutdown(). */
  exitCode: number | undefined;
  /** shutdown() started by a signal: past the deadline the process ends by it (0: none). */
  signal: number;
  markExiting: boolean;
  /** closeServices() and shutdown(): results are returned, and warned about once they return. */
  explicit: boolean;
  /** closeServices(): a stuck close is only reported (never ends the process). */
  unbounded: boolean;
  /** The native watchdog bounds each JS close (main thread, @devexit/native loaded). */
  watched: boolean;
  /** performance.now() past which a JS close counts as timed out. */
  deadline: number;
  /** DEVEXIT_REPORT in force: what the layer prints per close. */
  report: ReportMode;
  /** shutdown(): whether each JS close's drain finished before the deadline. */
  drained: Map<JsEntry, boolean> | undefined;
  queue: JsEntry[];
  next: number;
  /** The watchdog was given the queue (with the run's first watch). */
  queueSent: boolean;
  current: JsEntry | undefined;
  currentStart: number;
  /** The closes of this run that were reported (each exactly once). */
  reported: Set<JsEntry>;
  nativeDone: boolean;
  done: boolean;
  entries: CloseReportEntry[];
}

/** Worker bookkeeping of this realm (threads.ts, workerSide.ts). */
export interface ThreadsState {
  /** This thread's words, shared with the thread that stops it (see threads.ts for the layout). */
  own: Int32Array;
  /** The Workers of the process this realm heard of: threadId -> their words and parent. */
  known: Map<number, { words: Int32Array; parent: number }>;
  /** The Workers this realm created, still running: threadId -> the Worker object. */
  children: Map<number, import('node:worker_threads').Worker>;
  /** The directory channel this realm listens on (threads.ts). */
  directory: import('node:worker_threads').BroadcastChannel | undefined;
  /** In a Worker: this thread announced itself (workerSide.ts). */
  announced: boolean;
  /**
   * In a Worker: starts the stop asked in `own` at once (a refused section saw it first), or
   * moves the one in progress on (the last open section ended).
   */
  kick: (() => void) | undefined;
  /** In a Worker: the stop in progress (once). */
  stopping: Promise<void> | undefined;
  /**
   * In a Worker: the code of a process.exit() called with a section open while a shutdown's stop
   * ran; the exit happens once that shutdown's part ended (workerSide.ts).
   */
  exitAsked?: number;
  /** The name of the last critical section entered here (published in `own`), for a report. */
  lastName: string | undefined;
  /** The last unnamed section's function, whose name is read only when needed. */
  lastFn: unknown;
}

export interface CoreState {
  version: 4;
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
  /** shutdown() of this realm, once called. */
  shutdown: ShutdownRun | undefined;
  /** configure({ logger }): every warning goes there. */
  logger: DevexitLogger | undefined;
  /** The signal listeners devexit installed (signal -> listener). */
  signalListeners: Map<string, (signal: NodeJS.Signals) => void>;
  /** Whether the application listened to a signal when it arrived (signal -> answer), see signals.ts. */
  appListens: Map<string, boolean>;
  /** The signal that started the shutdown, and when (Date.now()): the same one again at once is a duplicate. */
  signalAt?: { signal: string; at: number } | undefined;
  /**
   * While shutdown()'s native closes run on the close engine (closeAsync): where the native report
   * stood when they began, and their layer. An exit meanwhile reports the closes the engine
   * finished too: their results reach JS only when the promise settles, which the exit never sees.
   */
  nativeAsync?: { from: number; layer: string } | undefined;
  threads: ThreadsState | undefined;
  /** process.on('worker') is installed in this realm (threads.ts). */
  threadsArmed: boolean;
  /**
   * The JS exit layer (exitLayer.ts), once its hooks are installed: @devexit/native's stand-in
   * layer runs it when it loads core at exit (an observer of the exit appeared).
   */
  exitLayer?: (code: unknown, how: 'process.exit' | 'process.reallyExit') => void;
  /**
   * What a realm does with a Worker it created (threads.ts), once it listens for them:
   * @devexit/native loads core with the main thread's first Worker and hands it that Worker.
   */
  workerCreated?: (worker: import('node:worker_threads').Worker) => void;
}

// @4: closes, shutdown and Workers changed shape (@3 had no threads); an older core in the same
// realm keeps its own state.
const KEY = Symbol.for('@devexit/core/state@4');

let cached: CoreState | undefined;

/** One state per JS realm, shared by every copy of @devexit/core (of this shape) loaded into it. */
export function coreState(): CoreState {
  if (cached) return cached;
  const g = globalThis as unknown as Record<symbol, CoreState | undefined>;
  let state = g[KEY];
  if (!state) {
    state = {
      version: 4,
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
      shutdown: undefined,
      logger: undefined,
      signalListeners: new Map(),
      appListens: new Map(),
      threads: undefined,
      threadsArmed: false,
    };
    Object.defineProperty(globalThis, KEY, { value: state, enumerable: false });
  }
  cached = state;
  return state;
}
