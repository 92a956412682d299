import { settings } from './settings.js';
import { workerThreads, workerThreadsLoaded } from './thread.js';

/**
 * The opt-in for code that calls a plain worker.terminate() (configure({ workers: 'guard' }),
 * DEVEXIT_WORKERS=guard): the one thing of Node's that devexit replaces for it.
 */
type Terminate = (this: import('node:worker_threads').Worker) => Promise<number>;
let original: Terminate | undefined;
let patched: Terminate | undefined;
let guardTerminate: ((w: import('node:worker_threads').Worker) => Promise<number>) | undefined;

/** Set by terminate.ts: what a guarded worker.terminate() calls. */
export function setGuardTerminate(fn: (w: import('node:worker_threads').Worker) => Promise<number>): void {
  guardTerminate = fn;
}

/** The Worker.prototype.terminate Node ships (before any patch of devexit's). */
export function originalTerminate(): Terminate {
  return original ?? (workerThreads().Worker.prototype.terminate as Terminate);
}

/**
 * workers: 'guard' patches worker_threads' Worker.prototype.terminate in this realm so that a
 * plain worker.terminate() is devexit's terminate(worker); 'off' puts Node's back. Applied when
 * configured, and when worker_threads gets loaded (the first Worker this realm creates).
 */
export function applyWorkersGuard(): void {
  if (!workerThreadsLoaded()) return;
  const proto = workerThreads().Worker.prototype as unknown as { terminate: Terminate };
  const want = settings().workers === 'guard';
  if (want && proto.terminate !== patched) {
    original ??= proto.terminate;
    patched = function terminate(this: import('node:worker_threads').Worker) {
      return (guardTerminate as (w: import('node:worker_threads').Worker) => Promise<number>)(this);
    };
    proto.terminate = patched;
  } else if (!want && original && proto.terminate === patched) {
    proto.terminate = original;
  }
}
