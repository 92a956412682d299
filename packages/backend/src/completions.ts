import {
  abortError,
  DevexitError,
  type DeviceId,
  deviceClosedError,
  exitingError,
  isExiting,
  outOfRangeError,
} from '@devexit/core';
import { backendError } from './checks.js';

/** Native statuses (devexit::Status in devexit_protocol.hpp; test/protocol.test.ts checks them). */
export const Status = {
  ok: 0,
  closed: 1,
  exiting: 2,
  badBuffer: 3,
  outOfRange: 4,
  startFailed: 5,
  badArgs: 6,
  vendorError: 7,
} as const;

/** The typed error for a native status, in every backend alike. */
export function statusError(
  status: number,
  where: { backend: string; device: DeviceId | undefined; what: string },
  message?: string | null,
  vendorError?: string,
): Error {
  const detail = message ? `: ${message}` : '';
  switch (status) {
    case Status.closed:
      if (isExiting()) return exitingError(where.what);
      return where.device
        ? deviceClosedError(where.device, where.what)
        : new DevexitError(
            'ERR_DEVEXIT_DEVICE_CLOSED',
            `devexit: cannot ${where.what}: ${where.backend} is closed`,
          );
    case Status.exiting:
      return exitingError(where.what);
    case Status.outOfRange:
      return outOfRangeError(
        `${where.backend}: ${where.what}`,
        message ?? 'past the end',
        'a buffer of this device',
      );
    case Status.badBuffer:
    case Status.badArgs:
      return backendError(
        where.backend,
        `cannot ${where.what}${detail || ': the native layer refused its arguments'}`,
      );
    default:
      return backendError(where.backend, `${where.what} failed${detail}`, vendorError);
  }
}

/** How a native backend answers (devexit_queue_binding.hpp's setDispatcher / setRef). */
export interface CompletionAddon {
  setDispatcher(fn: Dispatcher): void;
  setRef(ref: boolean): void;
}

export type Dispatcher = (
  id: number,
  status: number,
  error: string | null,
  errorName: string | undefined,
  data: Uint8Array | undefined,
  value: number,
) => void;

export interface Completed {
  data: Uint8Array | undefined;
  value: number;
}

interface Waiting {
  resolve(r: Completed): void;
  reject(e: Error): void;
  /** The promise the caller got: a close's rejection is marked handled on it. */
  promise: Promise<unknown>;
  owner: Set<number> | undefined;
  where: { backend: string; device: DeviceId | undefined; what: string };
}

/**
 * One realm's promises waiting for a native addon's service threads. The event loop is kept
 * alive exactly while something waits. A "closed" notice from the native layer (a close run with
 * JS alive, from any realm) goes to `onClosed`, which rejects what waits on that device.
 */
export class Completions {
  readonly #addon: CompletionAddon;
  readonly #waiting = new Map<number, Waiting>();
  #next = 1;
  #installed = false;
  onClosed: (index: number, service: string) => void = () => {};
  /**
   * Applied to each error a native answer or refusal rejects with, before it reaches the caller:
   * a backend may add fields of its own (hip keeps `hipError` beside the shared `vendorError`).
   */
  decorate: (err: Error) => Error = (err) => err;

  constructor(addon: CompletionAddon) {
    this.#addon = addon;
  }

  /**
   * Starts a native command that answers `id`; `start` returns its status. The promise settles
   * with map(answer), or rejects with the typed error for a refusal. When `signal` aborts first,
   * it rejects with an AbortError and the answer, when it comes, is dropped: the command itself
   * runs (nothing a queued command may touch changes under it).
   */
  expect<T>(
    owner: Set<number> | undefined,
    where: Waiting['where'],
    start: (id: number) => number,
    map: (c: Completed) => T,
    signal?: AbortSignal,
  ): Promise<T> {
    if (signal?.aborted) return Promise.reject(abortError(signal, where.what));
    this.#install();
    const id = this.#next++;
    let waiting: Waiting | undefined;
    const promise = new Promise<T>((resolve, reject) => {
      const status = start(id);
      if (status !== Status.ok) {
        reject(this.decorate(statusError(status, where)));
        return;
      }
      waiting = { resolve: (c) => resolve(map(c)), reject, owner, where, promise: undefined as never };
    });
    if (waiting) {
      const w = waiting;
      w.promise = promise;
      this.#waiting.set(id, w);
      owner?.add(id);
      if (this.#waiting.size === 1) this.#addon.setRef(true);
      if (signal) {
        const abort = () => {
          if (this.#waiting.get(id) !== w) return;
          this.#forget(id, w);
          w.reject(abortError(signal, where.what));
        };
        signal.addEventListener('abort', abort, { once: true });
        const detach = () => signal.removeEventListener('abort', abort);
        promise.then(detach, detach);
      }
    }
    return promise;
  }

  /** Stops waiting for `id`: its answer, when it comes, finds nobody. */
  #forget(id: number, w: Waiting): void {
    this.#waiting.delete(id);
    w.owner?.delete(id);
    if (this.#waiting.size === 0) this.#addon.setRef(false);
  }

  /**
   * Rejects everything `owner` waits for (its device closed). The rejections are marked handled:
   * a read or flush the program dropped must not become an unhandled rejection at a close; a
   * handler the program attached still sees the error.
   */
  rejectAll(owner: Set<number>, error: () => Error): void {
    for (const id of owner) {
      const w = this.#waiting.get(id);
      if (!w) continue;
      this.#waiting.delete(id);
      w.promise.catch(() => {});
      w.reject(error());
    }
    owner.clear();
    if (this.#waiting.size === 0 && this.#installed) this.#addon.setRef(false);
  }

  #install(): void {
    if (this.#installed) return;
    this.#installed = true;
    this.#addon.setDispatcher(this.#dispatch);
  }

  readonly #dispatch: Dispatcher = (id, status, error, errorName, data, value) => {
    if (id === 0) {
      this.onClosed(value, error ?? '');
      return;
    }
    const w = this.#waiting.get(id);
    if (!w) return; // aborted, or settled by a close
    this.#forget(id, w);
    if (status === Status.ok) w.resolve({ data, value });
    // Dropped by a close: the device closed, whether or not the process is exiting.
    else if (status === Status.closed && w.where.device) {
      w.promise.catch(() => {});
      w.reject(this.decorate(deviceClosedError(w.where.device, w.where.what)));
    } else w.reject(this.decorate(statusError(status, w.where, error, errorName)));
  };
}
