import { coreState } from './state.js';

/** A device, process-wide: backend type (u16, from the backend's name) and index (u32). */
export interface DeviceId {
  readonly type: number;
  readonly index: number;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;

/** Types of the built-in backends. The native registry uses the same numbers. */
export const BUILTIN_DEVICE_TYPES: Readonly<Record<string, number>> = Object.freeze({
  cpu: 1,
  cuda: 2,
  hip: 3,
  wgpu: 4,
});
const FIRST_DYNAMIC_TYPE = 16;

export function checkName(value: unknown, argument: string): string {
  if (typeof value !== 'string' || !NAME.test(value)) {
    throw new TypeError(
      `devexit: ${argument} must be a non-empty name of at most 64 letters, digits, '.', '_', ':' or '-'; got ${describe(value)}`,
    );
  }
  return value;
}

/** How a bad argument is named in a TypeError: strings quoted, objects by kind, not by content. */
export function describe(value: unknown): string {
  if (typeof value === 'string')
    return value.length > 80
      ? `${JSON.stringify(value.slice(0, 80))}… (${value.length} characters)`
      : JSON.stringify(value);
  if (typeof value === 'function') return 'a function';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return String(value);
}

/**
 * The device type for a backend name: the same number for the same name everywhere in the
 * process (all workers, all copies) once @devexit/native is loaded; distinct between names, so
 * cuda device 0 and hip device 0 are different devices.
 */
export function deviceType(backendName: string): number {
  checkName(backendName, 'backendName');
  const state = coreState();
  const known = state.typesByName.get(backendName);
  if (known !== undefined) return known;
  let type = BUILTIN_DEVICE_TYPES[backendName];
  if (type === undefined) {
    type = state.native ? state.native.deviceType(backendName) : FIRST_DYNAMIC_TYPE + state.typesByName.size;
  }
  state.typesByName.set(backendName, type);
  state.namesByType.set(type, backendName);
  return type;
}

/** The backend name of a device type, or `type<N>` if this isolate never saw it. */
export function deviceTypeName(type: number): string {
  const state = coreState();
  const name = state.namesByType.get(type);
  if (name) return name;
  for (const [n, t] of Object.entries(BUILTIN_DEVICE_TYPES)) if (t === type) return n;
  return `type${type}`;
}

/** Builds a validated DeviceId from a backend name (or type number) and an index. */
export function deviceId(backend: string | number, index: number): DeviceId {
  const type = typeof backend === 'number' ? backend : deviceType(backend);
  return checkDeviceId({ type, index }, 'device');
}

export function checkDeviceId(device: unknown, argument: string): DeviceId {
  if (typeof device !== 'object' || device === null) {
    throw new TypeError(`devexit: ${argument} must be a DeviceId { type, index }; got ${describe(device)}`);
  }
  const { type, index } = device as Record<string, unknown>;
  if (typeof type !== 'number' || !Number.isInteger(type) || type < 1 || type > 0xffff) {
    throw new TypeError(`devexit: ${argument}.type must be an integer in 1..65535; got ${describe(type)}`);
  }
  if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index > 0xffffffff) {
    throw new TypeError(
      `devexit: ${argument}.index must be an integer in 0..4294967295; got ${describe(index)}`,
    );
  }
  return { type, index };
}

export function formatDeviceId(device: DeviceId): string {
  return `${deviceTypeName(device.type)}:${device.index}`;
}
