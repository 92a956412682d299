import { join } from 'node:path';
import type { AddonSpec, QueueAddon } from '@devexit/backend';

/** Opaque handle of a process-wide native CUDA device (its queue service). */
export type NativeHandle = { readonly __brand: 'devexit-cuda-device' };

/** A refusal from the native layer: a devexit status, why, and libcuda's name for it. */
export interface NativeFailure {
  status: number;
  error: string;
  errorName?: string;
}

export interface NativeProbe {
  registry: boolean;
  registryError?: string;
  cuda: {
    loaded: boolean;
    error?: string;
    path?: string;
    /** cuDriverGetVersion: 1000 * major + 10 * minor. */
    driverVersion?: number;
    standin?: string;
    /** cuInit(0), run once per process. */
    init?: number;
    initName?: string;
    countStatus?: number;
    countName?: string;
    count?: number;
  };
  nvrtc: {
    loaded: boolean;
    error?: string;
    path?: string;
    version?: string;
    /** The sm_XY NVRTC can target, as XY. */
    archs?: number[];
  };
}

export interface NativeDeviceInfo {
  name: string;
  major: number;
  minor: number;
  totalMem: number;
}

export interface NativeCompilerState {
  /** 0 none, 1 nvrtc, 2 cuda (the diagnostic keepalive). */
  keepalive: number;
  compiles: number;
  polls: number;
  /** The cuda keepalive's last cuDeviceGetCount result. */
  lastPoll?: number;
  lastPollName?: string;
}

/** The whole native surface of devexit_cuda.node. */
export interface CudaAddon extends QueueAddon<NativeHandle> {
  probe(): NativeProbe;
  deviceInfo(index: number): NativeDeviceInfo | NativeFailure;
  /** The device's queue service, started; `arch` is what its built-ins were compiled for. */
  open(index: number, arch: string): NativeHandle | NativeFailure;
  /** Loads a NUL-terminated module image; `id` settles with the kernel's id as its value. */
  loadModule(h: NativeHandle, image: Uint8Array, entry: string, id: number): number;
  startCompiler(keepalive: number, intervalUs: number): { status: number; error?: string };
  /** `id` settles with the PTX as data and the compile's milliseconds as value. */
  compile(source: string, name: string, options: string[], builtinArch: string, id: number): number;
  compilerState(): NativeCompilerState | null;
  compilerDrain(id: number): number;
  compilerClose(): string | undefined;
  builtinSource(): string;
  builtinsCompiled(arch: string): boolean;
}

/**
 * devexit_cuda.node: DEVEXIT_CUDA_ADDON, a local build, or the prebuild. Loading it loads no CUDA
 * library.
 */
export const ADDON: AddonSpec = {
  name: 'devexit_cuda',
  packageDir: join(__dirname, '..'),
  // Named, not read from packageDir/package.json: a bundle's folder holds the application's.
  platformPackages: '@devexit/cuda',
  envVar: 'DEVEXIT_CUDA_ADDON',
  exports: ['probe', 'open', 'deviceInfo', 'compilerDrain', 'submit'],
};
