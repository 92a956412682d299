import { argError, checkInteger, checkOptions } from '@devexit/backend';
import {
  abortError,
  checkSignal,
  type DeviceId,
  deviceId,
  exitingError,
  isExiting,
  unavailableError,
} from '@devexit/core';
import { hipAddon, isRefusal, type NativeCompilerState } from './addon.js';
import { hipBackendError, refusalError } from './errors.js';
import { addon, realm } from './realm.js';

export interface CompileOptions {
  /** The target ("gfx90a", "gfx1030", with features "gfx90a:xnack-"). Omitted: hiprtc's default (the current device). */
  arch?: string;
  /** More hiprtc options ("-O3", "-DNAME=1"). */
  options?: readonly string[];
  /** The program's file name in diagnostics. */
  name?: string;
  /** Stops waiting: rejects with an AbortError; the compile itself runs on, its result dropped. */
  signal?: AbortSignal;
}

export interface CompilerOptions {
  /**
   * Diagnostic keepalive: while idle, the compiler thread calls hipGetDeviceCount every this
   * many microseconds (0: back to back). Off by default; it keeps the thread inside HIP, which
   * the exit-race test needs.
   */
  idlePollUs?: number;
}

const ARCH = /^gfx[0-9a-f]+(:[a-z-]+[+-])*$/;

/** The compiler's pseudo-device: it is not tied to a GPU. */
function host(): DeviceId {
  return deviceId('hip-host', 0);
}

/** Compiles on the compiler service; device >= 0 is made current first (for hiprtc's default target). */
export function compileOn(device: number, source: unknown, options: CompileOptions): Promise<Uint8Array> {
  if (typeof source !== 'string') throw argError('source', 'HIP C++ (a string)', source, true);
  const extra: unknown = options.options ?? [];
  if (!Array.isArray(extra) || !extra.every((o) => typeof o === 'string')) {
    throw argError('options.options', 'an array of strings', extra, true);
  }
  if (options.arch !== undefined && (typeof options.arch !== 'string' || !ARCH.test(options.arch))) {
    throw argError('options.arch', 'a target such as "gfx90a"', options.arch, true);
  }
  if (options.name !== undefined && typeof options.name !== 'string') {
    throw argError('options.name', 'a file name (a string)', options.name, true);
  }
  const signal = checkSignal(options.signal);
  if (isExiting()) throw exitingError('compile');
  if (signal?.aborted) return Promise.reject(abortError(signal, 'compile'));
  const a = addon();
  const args = [...(options.arch ? [`--offload-arch=${options.arch}`] : []), ...(extra as string[])];
  const where = { backend: 'hip', device: host(), what: 'compile' };
  return realm().expect(
    undefined,
    where,
    (id) => {
      const r = a.compile(source, options.name ?? 'program.hip', args, device, id);
      if (isRefusal(r)) throw refusalError(r, where);
      return r;
    },
    (r) => r.data ?? new Uint8Array(0),
    signal,
  );
}

/**
 * Compiles HIP C++ to a code object with hiprtc, on the compiler service (its own thread, started
 * on first use, closed at exit). Needs no device when `arch` is given. On ROCm 5.x, targets its
 * code-object compiler does not know (gfx940+, gfx11xx) are refused with an error instead of
 * letting it abort the process.
 */
export async function compile(source: string, options?: CompileOptions): Promise<Uint8Array> {
  return compileOn(-1, source, checkOptions<CompileOptions>(options));
}

/** The HIP C++ of the built-in kernels (fill_u32, copy, saxpy_f32, sum_f32). */
export function builtinKernelSource(): string {
  return addon().builtinSource();
}

/**
 * Starts the hiprtc compiler service now (compile() starts it on first use) and returns what
 * its thread's HIP initialisation returned. The service is registered as `hip-host:0/compiler`.
 */
export function startCompiler(options?: CompilerOptions): NativeCompilerState {
  const { idlePollUs } = checkOptions<CompilerOptions>(options);
  if (idlePollUs !== undefined) checkInteger(idlePollUs, 'options.idlePollUs', 0, 10_000_000);
  // No probe first: the compiler thread may be the process's first HIP user.
  if (isExiting()) throw exitingError('start the hiprtc compiler');
  const r = addon().startCompiler(idlePollUs ?? -1);
  if (isRefusal(r)) throw refusalError(r, { device: host(), what: 'start the hiprtc compiler' });
  return r;
}

/** The compiler service's HIP initialisation results and idle polls so far, or null when it is not running. */
export function compilerState(): NativeCompilerState | null {
  try {
    return hipAddon().compilerState();
  } catch {
    return null; // no addon: no compiler either
  }
}

/** Stops the compiler service (exit then has nothing to close for it); a later compile starts a new one. */
export async function stopCompiler(): Promise<void> {
  let a: ReturnType<typeof hipAddon>;
  try {
    a = hipAddon();
  } catch {
    return; // no addon: nothing ever started
  }
  const err = a.stopCompiler();
  if (err) throw hipBackendError(`stopping the hiprtc compiler failed: ${err}`);
}

/** Why hiprtc of the loaded runtime would refuse a target, or undefined if it compiles for it. */
export function refuseArch(arch: string): string | undefined {
  if (typeof arch !== 'string') throw argError('arch', 'a target name (a string)', arch, true);
  const r = addon().refuseArch(arch);
  if (r.unavailable !== undefined) throw unavailableError('hip', `library missing: ${r.unavailable}`);
  return r.refused;
}
