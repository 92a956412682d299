import { join } from 'node:path';
import { loadAddon } from '@devexit/backend/loader';

/** Opaque handle of a native device (its queue service). */
export type NativeDevice = { readonly __nativeDevice: unique symbol };

export interface NativeVersions {
  path: string;
  runtimeVersion: number;
  driverVersion: number;
  hiprtc: string;
  hiprtcVersion?: string;
  standin: string;
}

export interface NativeProbe {
  loaded: boolean;
  error?: string;
  versions?: NativeVersions;
  initStatus?: number;
  initName?: string;
  countStatus?: number;
  countName?: string;
  count?: number;
}

export interface NativeCompilerState {
  initStatus: number;
  initName: string;
  countStatus: number;
  countName: string;
  count: number;
  polls: number;
}

export type Dispatcher = (
  id: number,
  error: string | null,
  hipError: string | undefined,
  data: Uint8Array | undefined,
  value: number,
  dropped: boolean,
) => void;

export interface HipBinding {
  setDispatcher(fn: Dispatcher): void;
  setRef(ref: boolean): void;
  probe(): NativeProbe;
  deviceInfo(index: number): { name?: string; arch?: string; error?: string; hipError?: string };
  openQueue(index: number, arch: string): NativeDevice;
  alloc(dev: NativeDevice, bytes: number): number;
  free(dev: NativeDevice, buffer: number): void;
  write(dev: NativeDevice, buffer: number, offset: number, data: Uint8Array): void;
  read(dev: NativeDevice, buffer: number, offset: number, bytes: number, id: number): void;
  fill(dev: NativeDevice, buffer: number, value: number, offset: number, bytes: number): void;
  copy(
    dev: NativeDevice,
    src: number,
    dst: number,
    bytes: number,
    srcOffset: number,
    dstOffset: number,
  ): void;
  launch(
    dev: NativeDevice,
    kernel: number,
    gx: number,
    gy: number,
    gz: number,
    kinds: Uint8Array,
    values: Float64Array,
  ): void;
  loadModule(dev: NativeDevice, code: Uint8Array, entry: string, id: number): void;
  flush(dev: NativeDevice, id: number): void;
  closeQueue(dev: NativeDevice): string | undefined;
  startCompiler(pollUs?: number): NativeCompilerState;
  compile(source: string, name: string, options: string[], device: number, id: number): void;
  stopCompiler(): string | undefined;
  compilerState(): NativeCompilerState | null;
  refuseArch(arch: string): string | undefined;
  builtinSource(): string;
}

let cached: HipBinding | undefined;
let failure: string | undefined;

/**
 * Loads devexit_hip.node through the one devexit loader (DEVEXIT_HIP_ADDON, a local build, the
 * prebuild in @devexit/hip-<platform>). @devexit/native is loaded first: the addon finds the
 * registry through it. Returns undefined, with the loader's reason in loadFailure(), when the
 * addon does not load.
 */
export function loadBinding(): HipBinding | undefined {
  if (cached || failure) return cached;
  require('@devexit/native');
  try {
    cached = loadAddon<HipBinding>({
      name: 'devexit_hip',
      packageDir: join(__dirname, '..'),
      envVar: 'DEVEXIT_HIP_ADDON',
    });
  } catch (err) {
    failure = (err as Error).message;
  }
  return cached;
}

export function loadFailure(): string | undefined {
  return failure;
}
