import type { Worker } from 'node:worker_threads';
import { configure, terminate } from '@devexit/core';

/**
 * Ends a Worker without aborting Dawn: @devexit/core's terminate() (the Worker's Dawn promises
 * are critical sections; its devices close on its thread first). Kept for existing callers.
 */
export function terminateWorker(worker: Worker): Promise<number> {
  return terminate(worker);
}

/** Opt-in: a plain worker.terminate() in this realm goes through terminate(): configure({ workers: 'guard' }). */
export function installWorkerGuards(): void {
  configure({ workers: 'guard' });
}
