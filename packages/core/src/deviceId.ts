import { coreState } from './state.js';
import { checkInteger, describe, invalidType, invalidValue } from './validate.js';

export { describe };

/** A device, process-wide: backend type (u16, from the backend's name) and index (u32). */
export interface DeviceId {
  readonly type: number;
  readonly index: number;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;

/** Types of the built-in backends. The native registry uses the same numbers. A map without a
 * prototype: only these names are keys ('constructor' is not). */
export const BUILTIN_DEVICE_TYPES: Readonly<Record<string, number>> = Object.freeze(
  Object.assign(Object.create(null) as Record<string, number>, { cpu: 1, cuda: 2, hip: 3, wgpu: 4 }),
);
const FIRST_DYNAMIC_TYPE = 16;

const NAME_RULE =
  "a non-empty name of at most 64 letters, digits, '.', '_', ':' or '-', starting with a letter or digit";

export function checkName(value: unknown, argument: string): string {
  if (typeof value !== 'string') throw invalidType(argument, NAME_RULE, value);
  if (!NAME.test(value)) throw invalidValue(argument, NAME_RULE, value);
  return value;
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
  let type = Object.hasOwn(BUILTIN_DEVICE_TYPES, backendName) ? BUILTIN_DEVICE_TYPES[backendName] : undefined;
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
    throw invalidType(argument, 'a DeviceId { type, index }', device);
  }
  const { type, index } = device as Record<string, unknown>;
  return {
    type: checkInteger(type, `${argument}.type`, 1, 0xffff),
    index: checkInteger(index, `${argument}.index`, 0, 0xffffffff),
  };
}

/** `cpu:0`. A value that is not a DeviceId is refused (it used to print "typeundefined:undefined"). */
export function formatDeviceId(device: DeviceId): string {
  const { type, index } = checkDeviceId(device, 'device');
  return `${deviceTypeName(type)}:${index}`;
}
