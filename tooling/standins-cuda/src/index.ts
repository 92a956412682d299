import { join } from 'node:path';
import { loadAddon } from '@devexit/native/loader';

const release = join(__dirname, '..', 'build', 'Release');

/**
 * Path of the stand-in libcuda.so.1 (a test double for machines without an NVIDIA GPU; CI only).
 * Point DEVEXIT_CUDA_LIBRARY at it to run @devexit/cuda on it.
 */
export const standinCudaPath: string = join(release, 'libcuda.so.1');

/** How the stand-in's exit teardown leaves it (DEVEXIT_STANDIN_CUDA_TEARDOWN). */
export type StandinTeardown = 'deinit' | 'crash';

/** Kernels the stand-in has host versions of (the built-ins, plus two for tests). */
export const STANDIN_KERNELS: readonly string[] = [
  'fill_u32',
  'copy',
  'saxpy_f32',
  'sum_f32',
  'add_u32',
  'spin',
];

/**
 * The exit-race control fixture (a Node addon): arm() registers an atexit handler that stops and
 * joins an NVRTC compile loop, before NVRTC loads; start(nvrtcPath) starts the loop; linger(ms)
 * registers an atexit handler that waits, to hold the process open after a runtime's teardown.
 */
export const nvrtcControlPath: string = join(release, 'nvrtc_control.node');

export interface NvrtcControl {
  /** Registers the stopping atexit handler; returns whether NVRTC was already loaded. */
  arm(): boolean;
  /** Loads NVRTC from `path` and starts the compile loop; false if it cannot. */
  start(path: string): boolean;
  compiles(): number;
  /** Registers (once) an atexit handler that waits `ms` milliseconds. */
  linger(ms: number): boolean;
  /** Runs the exit teardown of the (loaded) stand-in libcuda at `path` now. */
  teardownStandin(path: string): boolean;
}

/**
 * Loads the control fixture through the one devexit loader: DEVEXIT_STANDINS_NVRTC_CONTROL, else
 * this package's own build (a test double has no prebuild).
 */
export function loadNvrtcControl(): NvrtcControl {
  return loadAddon<NvrtcControl>({
    name: 'nvrtc_control',
    packageDir: join(__dirname, '..'),
    envVar: 'DEVEXIT_STANDINS_NVRTC_CONTROL',
    platformPackages: false,
  });
}

/**
 * A module image the stand-in loads (also valid PTX): `.version`, `.target sm_XY` and one
 * `.entry` per kernel name, each with an empty body.
 */
export function standinPtx(entries: readonly string[], target = 'sm_52'): string {
  const body = entries.map((e) => `.visible .entry ${e}()\n{\n\tret;\n}\n`).join('');
  return `.version 7.0\n.target ${target}\n.address_size 64\n\n${body}`;
}
