import { checkSignal, withAbort } from './abort.js';
import { settings } from './settings.js';
import { endStuck, reportStuck, reportUnanswered, stopAsync, unanswered } from './stopThreads.js';
import { nowMs, workerThreads } from './thread.js';
import { knownWords, listen, STOP_EXIT, STOP_TERMINATE, targets, threadsState, W_STOP } from './threads.js';
import { checkOptions, invalidType } from './validate.js';
import { originalTerminate, setGuardTerminate } from './workersGuard.js';

type Worker = import('node:worker_threads').Worker;

export interface TerminateOptions {
  /** Stop waiting: terminate() rejects with an AbortError; the Worker's stop goes on. */
  signal?: AbortSignal;
}

/** Announcements in flight (a Worker that loaded devexit a moment ago): two turns of the loop. */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}

/**
 * Ends `worker` without cutting native work in flight: asks it to stop (its new critical sections
 * are refused), waits for its open sections to end and for its closes to run on its own thread
 * (its own Workers first), then terminates it; resolves with its exit code (as
 * worker.terminate() does: 1 for a terminated Worker, or the code it exited with meanwhile).
 * Bounded by the deadline (timeoutMs): a section still open then ends the process, as at exit
 * (onTimeout 'exit': the report names it; with @devexit/native the process ends with
 * process.exitCode, else 1, skipping library teardown); with onTimeout 'warn' it is terminated
 * anyway. A Worker where devexit never loaded is terminated at once.
 */
export async function terminate(worker: Worker, options?: TerminateOptions): Promise<number> {
  const wt = workerThreads();
  if (!(worker instanceof wt.Worker)) throw invalidType('worker', 'a worker_threads Worker', worker);
  const o = checkOptions(options, 'terminate() options', ['signal']);
  const signal = checkSignal(o.signal, 'options.signal');
  if (signal?.aborted) return withAbort(Promise.resolve(0), signal, 'terminate()');
  return withAbort(stopAndTerminate(worker), signal, 'terminate()');
}

async function stopAndTerminate(worker: Worker): Promise<number> {
  const plain = () => originalTerminate().call(worker) as Promise<number>;
  const id = worker.threadId;
  if (id < 0 || !settings().layers.js) return plain();
  threadsState();
  listen();
  if (!knownWords(id)) await settle();
  const words = knownWords(id);
  if (!words) return plain();
  const start = nowMs();
  const deadline = Date.now() + settings().timeoutMs;
  let exitCode: number | undefined;
  const exited = new Promise<void>((resolve) =>
    worker.once('exit', (code: number) => {
      exitCode = code;
      resolve();
    }),
  );
  // The Worker and its descendants (it stops them itself too: whichever is first).
  const list: Array<[number, Int32Array]> = [
    [id, words],
    ...targets(true).filter(([d]) => isDescendant(d, id)),
  ];
  const stuck = await stopAsync(list, STOP_TERMINATE, 1, false, deadline, exited);
  if (exitCode !== undefined) return exitCode;
  reportUnanswered(unanswered(list, STOP_TERMINATE), 'terminate', nowMs() - start);
  if (stuck.length > 0) {
    reportStuck(stuck, 'terminate', nowMs() - start);
    const c = process.exitCode;
    endStuck(stuck, typeof c === 'number' ? c : 1);
  }
  // The Worker was ending by itself (its own process.exit() came first, and the first stop asked
  // stays): its closes ran and it exits now, with the code it asked: wait for that (bounded)
  // instead of terminating it (which would make its code 1).
  if (Atomics.load(words, W_STOP) === STOP_EXIT) {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      exited,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, Math.max(0, deadline - Date.now()));
      }),
    ]);
    clearTimeout(timer);
    if (exitCode !== undefined) return exitCode;
  }
  return plain();
}

function isDescendant(threadId: number, ancestor: number): boolean {
  const known = threadsState().known;
  let at = known.get(threadId)?.parent;
  for (let hops = 0; at !== undefined && hops < 64; hops++) {
    if (at === ancestor) return true;
    at = known.get(at)?.parent;
  }
  return false;
}

setGuardTerminate((w) => terminate(w));
