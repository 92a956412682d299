import { argError, checkOptions, Status } from '@devexit/backend';
import { abortError, checkSignal, type DeviceId } from '@devexit/core';
import type { NativeCompilerState } from './addon.js';
import { compileChecked, cuda, startCompilerService } from './cuda.js';
import { ARCH } from './kernels.js';

export interface CompileOptions {
  /** The target: sm_90, compute_90 (PTX the driver compiles further), sm_90a. Omitted: NVRTC's default. */
  arch?: string;
  /** More NVRTC options: "-DNAME=1", "--use_fast_math", "-lineinfo". */
  options?: readonly string[];
  /** The program's file name in the log. Default "program.cu". */
  name?: string;
  /** Stops waiting: rejects with an AbortError; the compile itself runs on, its result dropped. */
  signal?: AbortSignal;
}

export interface CompilerOptions {
  /**
   * Diagnostic keepalive for exit tests, off by default: while the service runs, its thread keeps
   * calling the runtime, a small NVRTC compile ('nvrtc') or cuDeviceGetCount ('cuda'), so that a
   * call is in flight whenever the process exits. It never keeps the event loop alive.
   */
  keepalive?: 'nvrtc' | 'cuda';
  /** Microseconds between keepalive calls (0: back to back; at most 10 s). */
  intervalUs?: number;
}

const KEEPALIVE = { nvrtc: 1, cuda: 2 } as const;

/** The compiler service's pseudo-device: cuda-host:0 (it belongs to no GPU). */
export function compilerId(): DeviceId {
  return cuda.compiler().id;
}

const start = startCompilerService;

/** Checks compile()'s arguments; the NVRTC options they make. */
export function compileArgs(
  source: unknown,
  options: unknown,
): { name: string; options: string[]; signal: AbortSignal | undefined } {
  if (typeof source !== 'string' || source.length === 0)
    throw argError('source', 'CUDA C++ source (a non-empty string)', source, typeof source !== 'string');
  const o = checkOptions<CompileOptions>(options, ['arch', 'options', 'name', 'signal'], 'compile() options');
  if (o.arch !== undefined && (typeof o.arch !== 'string' || !ARCH.test(o.arch)))
    throw argError(
      'options.arch',
      'a target such as "sm_90" or "compute_90"',
      o.arch,
      typeof o.arch !== 'string',
    );
  const extra: unknown = o.options ?? [];
  if (!Array.isArray(extra) || !extra.every((x) => typeof x === 'string'))
    throw argError('options.options', 'an array of strings', extra, true);
  const name: unknown = o.name ?? 'program.cu';
  if (typeof name !== 'string' || !/^[^\0/]{1,255}$/.test(name))
    throw argError('options.name', 'a file name', name, typeof name !== 'string');
  const signal = checkSignal(o.signal);
  return {
    name,
    options: [...(o.arch ? [`--gpu-architecture=${o.arch}`] : []), ...(extra as string[])],
    signal,
  };
}

/**
 * Compiles CUDA C++ to PTX with NVRTC on the compiler service (one process-wide thread, started
 * on first use, registered as cuda-host:0/compiler and closed at exit). Needs no device. Settles
 * with the PTX text; rejects with ERR_DEVEXIT_BACKEND carrying NVRTC_ERROR_... and the log.
 */
export async function compile(source: string, options: CompileOptions = {}): Promise<string> {
  const args = compileArgs(source, options);
  if (args.signal?.aborted) throw abortError(args.signal, 'compile');
  return compileChecked(source, args.name, args.options, '', args.signal);
}

/**
 * Starts the compiler service now (compile() starts it on first use), with an optional
 * diagnostic keepalive; returns its state.
 */
export function startCompiler(options: CompilerOptions = {}): NativeCompilerState {
  const o = checkOptions<CompilerOptions>(options, ['keepalive', 'intervalUs'], 'startCompiler() options');
  if (o.keepalive !== undefined && o.keepalive !== 'nvrtc' && o.keepalive !== 'cuda')
    throw argError('options.keepalive', "'nvrtc' or 'cuda'", o.keepalive, typeof o.keepalive !== 'string');
  const interval: unknown = o.intervalUs ?? 0;
  if (typeof interval !== 'number' || !Number.isInteger(interval) || interval < 0 || interval > 10_000_000)
    throw argError('options.intervalUs', 'an integer in 0..10000000', interval);
  start(o.keepalive ? KEEPALIVE[o.keepalive] : 0, interval);
  const state = cuda.addon().compilerState();
  if (!state)
    throw cuda.refusalError(Status.closed, { device: compilerId(), what: 'start the NVRTC compiler' });
  return state;
}

/** The compiler service's counters, or null when it is not running. */
export function compilerState(): NativeCompilerState | null {
  return cuda.addon().compilerState();
}

/**
 * Finishes the compiles queued so far, then stops the compiler service and unregisters its exit
 * close. A later compile() starts a new one.
 */
export async function stopCompiler(): Promise<void> {
  const addon = cuda.addon();
  if (!addon.compilerState()) return;
  await cuda
    .compiler()
    .run(
      'stop the compiler',
      (n) => addon.compilerDrain(n),
      () => undefined,
    )
    .catch(() => undefined);
  const error = addon.compilerClose();
  if (error) throw cuda.error(`closing cuda-host:0/compiler failed: ${error}`);
}
