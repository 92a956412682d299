/**
 * The types every floor of core shares. A leaf: it imports nothing, so the modules above it
 * (state, settings, diagnostics, report, the exit layers) never import one another in a circle.
 */

export type OnTimeout = 'exit' | 'warn';
export type ReportMode = 'off' | 'text' | 'json';
/** Signals on which devexit can drain and close, then end the process by the signal. */
export type ShutdownSignal = 'SIGINT' | 'SIGTERM' | 'SIGHUP';
/**
 * How a plain `worker.terminate()` is handled: 'off' (as Node does it) or 'guard' (through
 * devexit's terminate(): critical sections and the Worker's closes first).
 */
export type WorkersMode = 'off' | 'guard';

export interface Layers {
  /** The JS layer: process.emit('exit') and process.reallyExit (main thread and Workers). */
  readonly js: boolean;
  /** The main-thread thread_local guard (Linux/glibc builds). */
  readonly tls: boolean;
  /** Exit handlers registered at load and after each runtime's first use. */
  readonly atexit: boolean;
}

export interface Settings {
  /** Bound on closing everything, JS closes included, in ms. */
  readonly timeoutMs: number;
  /** Past the deadline: 'exit' (flush stdio, end with the exit code) or 'warn' (go on). */
  readonly onTimeout: OnTimeout;
  readonly layers: Layers;
  readonly report: ReportMode;
  /** Signals that run shutdown() on the main thread (this realm's: signals are not process-wide settings). */
  readonly signals: readonly ShutdownSignal[];
  /** Whether plain worker.terminate() goes through devexit (this realm's). */
  readonly workers: WorkersMode;
  /** Where each value came from, as warnings name it: 'DEVEXIT_TIMEOUT_MS=500', 'the default'. */
  readonly sources: { readonly timeoutMs: string; readonly onTimeout: string };
}

/** One close, as the report tells it. */
export interface CloseReportEntry {
  /**
   * The device: { type name, type number, index }. A Worker's critical section still running at
   * the deadline is reported as { type: 'thread', typeId: 0, index: threadId }.
   */
  device: { type: string; typeId: number; index: number };
  service: string;
  /** Which layer ran it: js-exit, really-exit, worker-exit, shutdown, tls, atexit, explicit, ... */
  layer: string;
  ms: number;
  outcome: 'ok' | 'error' | 'timeout';
  pid: number;
  error?: string;
  /**
   * shutdown() only, when the service says: true when its queued work all ran before the
   * deadline; false when what was left was dropped (or a JS drain did not finish).
   */
  drained?: boolean;
  /** shutdown() only, native services: how many queued commands were dropped. */
  dropped?: number;
}

/** Receives every warning devexit gives (configure({ logger })). */
export type DevexitLogger = (warning: Error & { code?: string }) => void;

export interface ExitEvent {
  /** 'js-exit', 'really-exit', 'worker-exit' or 'shutdown'. */
  layer: string;
  /** The exit code, for an exit. */
  code?: number;
  /** The signal that started a shutdown. */
  signal?: string;
}

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

/**
 * What the native watchdog watches on a JS thread: a JS close, an observer of one, or the wait
 * for critical sections. Past the deadline it prints `what`, then ends the process by `signal`
 * (when > 0), else with `exitCode` (when >= 0), else only warns.
 */
export interface WatchSpec {
  layer: string;
  exitCode: number;
  signal: number;
  /** The report line the watchdog prints at the deadline: a close's device and service. */
  type: number;
  index: number;
  service: string;
  /** How the warning names it: 'a JS close', 'an observer of devexit:service:close', ... */
  what: string;
  /**
   * The run's JS closes in order, lines "<type>\t<index>\t<service>\n": sent with a run's first
   * watch, so that a watchdog ending the process gives each close not started its report line.
   */
  queue?: string;
  /** How many of the run's JS closes started (the watched one included). */
  started?: number;
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
  /** The settings in force in the process (the registry owner's); signals and workers are each realm's own. */
  settings(): Omit<Settings, 'signals' | 'workers'>;
  report(): CloseReportEntry[];
  forget(type: number, index: number, service: string): number;
  /** A JS close starts (main thread): the native watchdog bounds it by the deadline. exitCode < 0: explicit. */
  jsCloseBegin(layer: string, exitCode: number, type: number, index: number, service: string): void;
  /** It returned (or a nested exit abandoned it): true if past the deadline. */
  jsCloseEnd(): boolean;
  // ---- later additions: absent in older copies (or false/undefined when the registry's owner is one) ----
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
  /**
   * Watches what runs on this JS thread now (see WatchSpec), with the deadline of the run it
   * belongs to: `deadlineMs` from the first watch of a run. Replaces jsCloseBegin where present.
   */
  watch?(spec: WatchSpec, deadlineMs: number): void;
  /** Stops watching: returns 2 if the watchdog already reported it at the deadline, 1 if past it. */
  unwatch?(): number;
  /** Ends the watch session (a run finished): the next watch starts a new deadline. */
  endWatch?(): void;
  /** Writes `text` to stderr, flushes stdio and ends the process (no teardown): by `signal` (> 0), else with `code`. */
  endProcess?(code: number, text: string, signal?: number): never;
}
