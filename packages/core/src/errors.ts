import type { DeviceId } from './deviceId.js';
import { formatDeviceId } from './deviceId.js';
import { describe } from './validate.js';

/** Error codes every backend uses, so callers can branch on `err.code`. */
export type DevexitErrorCode =
  | 'ERR_DEVEXIT_EXITING'
  | 'ERR_DEVEXIT_DEVICE_CLOSED'
  | 'ERR_DEVEXIT_DEVICE_LOST'
  | 'ERR_DEVEXIT_OUT_OF_RANGE'
  | 'ERR_DEVEXIT_UNAVAILABLE'
  | 'ERR_DEVEXIT_SERVICE_CLOSE'
  | 'ERR_DEVEXIT_BACKEND';

export class DevexitError extends Error {
  readonly code: DevexitErrorCode;
  constructor(code: DevexitErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = 'DevexitError';
  }
}

/** Thrown when a service would start after the process began closing services for exit. */
export function exitingError(what: string): DevexitError {
  return new DevexitError('ERR_DEVEXIT_EXITING', `devexit: cannot ${what}: the process is exiting`);
}

/** A close that failed or threw. Emitted as a process warning; the other closes still ran. */
export class ServiceCloseError extends DevexitError {
  readonly device: DeviceId;
  readonly service: string;
  constructor(device: DeviceId, service: string, cause: unknown) {
    const why = cause instanceof Error ? cause.message : describe(cause);
    super(
      'ERR_DEVEXIT_SERVICE_CLOSE',
      `devexit: closing ${formatDeviceId(device)}/${service} failed: ${why}`,
      {
        cause,
      },
    );
    this.name = 'ServiceCloseError';
    this.device = device;
    this.service = service;
  }
}

export function deviceClosedError(device: DeviceId, what: string): DevexitError {
  return new DevexitError(
    'ERR_DEVEXIT_DEVICE_CLOSED',
    `devexit: cannot ${what}: ${formatDeviceId(device)} is closed`,
  );
}

/** The device was lost (the driver or someone else ended it): what it was asked to do did not run. */
export function deviceLostError(device: DeviceId, what: string, reason: string): DevexitError {
  return new DevexitError(
    'ERR_DEVEXIT_DEVICE_LOST',
    `devexit: cannot ${what}: ${formatDeviceId(device)} was lost: ${reason}`,
  );
}

export function outOfRangeError(what: string, value: unknown, range: string): DevexitError {
  return new DevexitError(
    'ERR_DEVEXIT_OUT_OF_RANGE',
    `devexit: ${what} out of range: ${describe(value)} (${range})`,
  );
}

export function unavailableError(backend: string, reason: string): DevexitError {
  return new DevexitError('ERR_DEVEXIT_UNAVAILABLE', `devexit: ${backend} is unavailable: ${reason}`);
}

/**
 * An operation given an AbortSignal was aborted: the same shape as Node's own (fs,
 * timers/promises): name 'AbortError', code 'ABORT_ERR', cause the signal's reason.
 */
export class AbortError extends Error {
  readonly code = 'ABORT_ERR' as const;
  constructor(message = 'The operation was aborted', options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AbortError';
  }
}
