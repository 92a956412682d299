/** Settings pushed into the registry (numbers as in devexit_host.h; absent = unchanged). */
export interface NativeSettingsUpdate {
  origin: 'env' | 'api';
  timeoutMs?: number;
  /** 0 exit, 1 warn. */
  onTimeout?: number;
  /** Bits: 1 js, 2 tls, 4 atexit. */
  layers?: number;
  /** 0 off, 1 text, 2 json. */
  report?: number;
  timeoutSource?: string;
  onTimeoutSource?: string;
}

/** The whole native surface of devexit_native.node. */
export interface BindingModule {
  readonly abiVersion: number;
  /** Host ABI of the registry's owner (1: an older copy owns it; later features are off). */
  readonly hostAbiVersion: number;
  /** This copy owns the registry (false: it uses the first copy's, at `sharedWith`). */
  readonly isOwner: boolean;
  /** Address of the registry table: the same for every copy in one process. */
  readonly registryAddress: bigint;
  readonly sharedWith?: string;
  isExiting(): boolean;
  exitingFlagBuffer(): ArrayBuffer | undefined;
  deviceType(name: string): number;
  forget(type: number, index: number, service: string): number;
  closeAll(layer: string, markExiting: boolean, exitCode?: number): number;
  /** Returns the status (0, or -2 for an invalid update). */
  applySettings(update: NativeSettingsUpdate): number;
  jsCloseBegin(layer: string, exitCode: number, type: number, index: number, service: string): void;
  jsCloseEnd(): boolean;
  /** Warnings not yet emitted in this process, one per line. */
  takeWarnings(): string;
  /** JSON lines. */
  report(): string;
  /** JSON object. */
  state(): string;
  armMainThread(by?: string): boolean;
  setExitCode(code: number): void;
  /** shutdown(): refuse new work process-wide. false: the registry's owner is an older copy. */
  beginShutdown(): boolean;
  /**
   * shutdown(): every native close on a helper thread; services drain for up to drainMs. `done`
   * gets the failures and the report lines (JSON lines). false: the owner cannot (older copy).
   */
  closeAsync(layer: string, drainMs: number, done: (failures: number, report: string) => void): boolean;
  /** Cuts the drains in progress short. */
  hurryShutdown(): void;
  /**
   * Watches what runs on this JS thread now, until `deadlineMs` from now (host ABI 4; false where
   * the registry's owner is older).
   */
  watch(
    spec: {
      layer: string;
      exitCode: number;
      signal: number;
      type: number;
      index: number;
      service: string;
      what: string;
      queue?: string;
      started?: number;
    },
    deadlineMs: number,
  ): boolean;
  /** 2: the watchdog reported it at the deadline; 1: past the deadline; 0. */
  unwatch(): number;
  endWatch(): void;
  /** Writes text, flushes stdio, ends the process (by signal > 0, else with code). false: cannot. */
  endProcess(code: number, text: string, signal?: number): boolean;
  /** Whether the calling thread is the process's main thread; undefined where the OS cannot tell. */
  isMainThread(): boolean | undefined;
}
