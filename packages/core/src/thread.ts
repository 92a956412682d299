import { coreState } from './state.js';

type WorkerThreads = typeof import('node:worker_threads');

let module: WorkerThreads | undefined;

/**
 * node:worker_threads, loaded on first use, not at startup: loading it costs 3-5 ms on the main
 * thread, and most processes never need it (a Worker, or the Worker machinery, loaded it already).
 */
export function workerThreads(): WorkerThreads {
  module ??= require('node:worker_threads') as WorkerThreads;
  return module;
}

/** Whether node:worker_threads is loaded in this realm already (asking costs nothing then). */
export function workerThreadsLoaded(): boolean {
  if (module) return true;
  const loaded = (process as { moduleLoadList?: string[] }).moduleLoadList;
  return !Array.isArray(loaded) || loaded.includes('NativeModule worker_threads');
}

let isMain: boolean | undefined;

/**
 * Whether this realm is the process's main thread. @devexit/native answers from the OS;
 * otherwise node:worker_threads is asked (and loaded, on first use).
 */
export function mainThread(): boolean {
  isMain ??= coreState().native?.isMainThread?.() ?? workerThreads().isMainThread;
  return isMain;
}

/** Whether this realm is a Worker, asked without loading anything (Workers load the module at start). */
export function isWorkerCheap(): boolean {
  const loaded = (process as { moduleLoadList?: string[] }).moduleLoadList;
  if (!Array.isArray(loaded)) return !workerThreads().isMainThread;
  return loaded.includes('NativeModule internal/process/worker_thread_only');
}

type WaitAsync = (
  array: Int32Array,
  index: number,
  value: number,
  timeout?: number,
) => { async: false; value: 'not-equal' | 'timed-out' } | { async: true; value: Promise<'ok' | 'timed-out'> };

/** Atomics.waitAsync (ES2024; V8 has it since Node 16). */
export const waitAsync: WaitAsync = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync;

export type Channel = import('node:worker_threads').BroadcastChannel;

/**
 * Milliseconds on a monotonic clock, as performance.now() but without loading perf_hooks (the
 * `performance` global loads it on first use: ~1.3 M instructions at an exit that never needed it).
 */
export function nowMs(): number {
  const [s, ns] = process.hrtime();
  return s * 1e3 + ns / 1e6;
}
