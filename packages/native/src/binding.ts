/** The whole native surface of devexit_native.node. */
export interface BindingModule {
  readonly abiVersion: number;
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
  /** onTimeout: 0 exit, 1 warn. */
  configure(timeoutMs: number | undefined, onTimeout: number | undefined): void;
  /** JSON lines. */
  report(): string;
  /** JSON object. */
  state(): string;
  armMainThread(by?: string): boolean;
  setExitCode(code: number): void;
}
