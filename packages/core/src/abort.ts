import { AbortError } from './errors.js';
import { invalidType } from './validate.js';

/** An AbortSignal option, checked: undefined or something that behaves as one. */
export function checkSignal(value: unknown, argument = 'options.signal'): AbortSignal | undefined {
  if (value === undefined) return undefined;
  const s = value as AbortSignal | null;
  if (
    typeof s !== 'object' ||
    s === null ||
    typeof s.aborted !== 'boolean' ||
    typeof s.addEventListener !== 'function' ||
    typeof s.removeEventListener !== 'function'
  ) {
    throw invalidType(argument, 'an AbortSignal', value);
  }
  return s;
}

/** The error an aborted `what` rejects with. */
export function abortError(signal: AbortSignal, what: string): AbortError {
  return new AbortError(`devexit: ${what} was aborted`, { cause: signal.reason });
}

/**
 * `promise`, or an AbortError as soon as `signal` aborts (then `onAbort` runs once). The work
 * behind the promise goes on; its result is dropped, and a later rejection of it is handled.
 */
export function withAbort<T>(
  promise: Promise<T>,
  signal: AbortSignal | undefined,
  what: string,
  onAbort?: () => void,
): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) {
    promise.catch(() => {});
    onAbort?.();
    return Promise.reject(abortError(signal, what));
  }
  return new Promise<T>((resolve, reject) => {
    const abort = () => {
      promise.catch(() => {});
      onAbort?.();
      reject(abortError(signal, what));
    };
    signal.addEventListener('abort', abort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', abort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', abort);
        reject(e);
      },
    );
  });
}
