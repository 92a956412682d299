import { type BackendError, backendError, statusError } from '@devexit/backend';
import { type DeviceId, unavailableError } from '@devexit/core';
import type { Refusal } from './addon.js';

/**
 * An ERR_DEVEXIT_BACKEND error from HIP or hiprtc. `vendorError` is the runtime's name for it
 * (`hipErrorIllegalAddress`, `HIPRTC_ERROR_COMPILATION`), as on every backend's errors;
 * `hipError` is the same name, kept for code written against earlier releases.
 */
export interface HipError extends BackendError {
  hipError?: string;
}

/** Adds `hipError` beside the shared `vendorError`. */
export function withHipError<E extends Error>(err: E): E {
  const e = err as E & HipError;
  if (typeof e.vendorError === 'string' && e.hipError === undefined) e.hipError = e.vendorError;
  return err;
}

export function hipBackendError(message: string, vendorError?: string): HipError {
  return withHipError(backendError('hip', message, vendorError));
}

/** The typed error for a native refusal. */
export function refusalError(r: Refusal, where: { device: DeviceId | undefined; what: string }): Error {
  if (r.unavailable)
    return unavailableError('hip', `library missing: ${r.error ?? 'libamdhip64 did not load'}`);
  return withHipError(statusError(r.status, { backend: 'hip', ...where }, r.error, r.errorName));
}
