import { argError, checkInteger, checkOptions, isRefusal } from '@devexit/backend';
import { abortError, checkSignal, exitingError, isExiting, unavailableError } from '@devexit/core';
import type { NativeCompilerState } from './addon.js';
import { compileOnService, hip } from './hip.js';

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

/**
 * Compiles HIP C++ to a code object with hiprtc, on the compiler service (its own thread, started
 * on first use, closed at exit). Needs no device when `arch` is given. On ROCm 5.x, targets its
 * code-object compiler does not know (gfx940+, gfx11xx) are refused with an error instead of
 * letting it abort the process.
 */
export async function compile(source: string, options?: CompileOptions): Promise<Uint8Array> {
  const o = checkOptions<CompileOptions>(options, ['arch', 'options', 'name', 'signal'], 'compile() options');
  if (typeof source !== 'string') throw argError('source', 'HIP C++ (a string)', source, true);
  const extra: unknown = o.options ?? [];
  if (!Array.isArray(extra) || !extra.every((x) => typeof x === 'string')) {
    throw argError('options.options', 'an array of strings', extra, true);
  }
  if (o.arch !== undefined && (typeof o.arch !== 'string' || !ARCH.test(o.arch))) {
    throw argError('options.arch', 'a target such as "gfx90a"', o.arch, true);
  }
  if (o.name !== undefined && (typeof o.name !== 'string' || !/^[^\0]{1,255}$/.test(o.name))) {
    // hiprtc reads the name as a C string: a NUL would cut it.
    throw argError(
      'options.name',
      'a file name (1 to 255 characters, no NUL)',
      o.name,
      typeof o.name !== 'string',
    );
  }
  const signal = checkSignal(o.signal);
  if (isExiting()) throw exitingError('compile');
  if (signal?.aborted) throw abortError(signal, 'compile');
  const args = [...(o.arch ? [`--offload-arch=${o.arch}`] : []), ...(extra as string[])];
  return compileOnService(-1, source, o.name ?? 'program.hip', args, signal);
}

/** The HIP C++ of the built-in kernels (fill_u32, copy, saxpy_f32, sum_f32). */
export function builtinKernelSource(): string {
  return hip.addon().builtinSource();
}

/**
 * Starts the hiprtc compiler service now (compile() starts it on first use) and returns what
 * its thread's HIP initialisation returned. The service is registered as `hip-host:0/compiler`.
 */
export function startCompiler(options?: CompilerOptions): NativeCompilerState {
  const { idlePollUs } = checkOptions<CompilerOptions>(options, ['idlePollUs'], 'startCompiler() options');
  if (idlePollUs !== undefined) checkInteger(idlePollUs, 'options.idlePollUs', 0, 10_000_000);
  // No probe first: the compiler thread may be the process's first HIP user.
  if (isExiting()) throw exitingError('start the hiprtc compiler');
  const r = hip.addon().startCompiler(idlePollUs ?? -1);
  if (isRefusal(r))
    throw hip.refusalError(r, { device: hip.compiler().id, what: 'start the hiprtc compiler' });
  return r;
}

/** The compiler service's HIP initialisation results and idle polls so far, or null when it is not running. */
export function compilerState(): NativeCompilerState | null {
  try {
    return hip.addon().compilerState();
  } catch {
    return null; // no addon: no compiler either
  }
}

/** Stops the compiler service (exit then has nothing to close for it); a later compile starts a new one. */
export async function stopCompiler(): Promise<void> {
  let a: ReturnType<typeof hip.addon>;
  try {
    a = hip.addon();
  } catch {
    return; // no addon: nothing ever started
  }
  const err = a.stopCompiler();
  if (err) throw hip.error(`stopping the hiprtc compiler failed: ${err}`);
}

/** Why hiprtc of the loaded runtime would refuse a target, or undefined if it compiles for it. */
export function refuseArch(arch: string): string | undefined {
  if (typeof arch !== 'string') throw argError('arch', 'a target name (a string)', arch, true);
  const r = hip.addon().refuseArch(arch);
  if (r.unavailable !== undefined) throw unavailableError('hip', `library missing: ${r.unavailable}`);
  return r.refused;
}
