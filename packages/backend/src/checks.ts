import {
  type ArgKind,
  BUILTIN_KERNELS,
  type BuiltinKernelName,
  checkInteger,
  DevexitError,
  DevexitTypeError,
  describeValue,
  invalidType,
  invalidValue,
  type KernelArg,
  type KernelParam,
  outOfRange,
  outOfRangeError,
} from '@devexit/core';

export { checkInteger, checkPath } from '@devexit/core';

/**
 * The backends' part of the one validator (core's validate.ts holds its primitives and wording,
 * and checks integers and paths for both): kernel arguments, grids, buffer ranges. One code per
 * mistake: ERR_INVALID_ARG_TYPE (a TypeError) for a value of the wrong type, ERR_OUT_OF_RANGE (a
 * RangeError) for a number outside the range its argument allows, ERR_INVALID_ARG_VALUE (a
 * TypeError) for any other refused value; a valid range past a buffer's end or past the device
 * count is ERR_DEVEXIT_OUT_OF_RANGE. Validation never changes state: callers check everything
 * first, then act.
 */
export function argError(argument: string, expected: string, value: unknown, wrongType?: boolean): TypeError {
  return (wrongType ?? typeof value !== 'number')
    ? invalidType(argument, expected, value)
    : invalidValue(argument, expected, value);
}

const U32_MAX = 0xffffffff;

function isInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v);
}

/** A device index, a byte count or an offset: an integer >= 0. */
export function checkSize(value: unknown, argument: string): number {
  return checkInteger(value, argument, 0);
}

/** A u32 value (fill patterns): an integer in [0, 2^32). */
export function checkU32(value: unknown, argument: string): number {
  return checkInteger(value, argument, 0, U32_MAX);
}

/** [offset, offset + bytes) must lie inside a buffer of `size` bytes. */
export function checkRange(size: number, offset: number, bytes: number, what: string): void {
  if (offset > size || bytes > size - offset) {
    throw outOfRangeError(`${what}: offset + bytes`, offset + bytes, `the buffer holds ${size} bytes`);
  }
}

/** The bytes of an ArrayBufferView, without copying. */
export function checkData(data: unknown, argument = 'data'): Uint8Array {
  if (!ArrayBuffer.isView(data)) {
    throw argError(argument, 'an ArrayBufferView (a typed array, Buffer or DataView)', data, true);
  }
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/**
 * A launch grid: a count, or [x, y?, z?]; each dimension an integer in [0, 2^32). A grid with a
 * zero dimension is valid and launches nothing.
 */
export function checkGrid(grid: unknown): [number, number, number] {
  const expected = 'an integer in 0..4294967295 or [x, y?, z?] of such integers';
  if (typeof grid === 'number') {
    if (!isInt(grid) || grid < 0 || grid > U32_MAX) throw outOfRange('grid', expected, grid);
    return [grid, 1, 1];
  }
  if (!Array.isArray(grid) || grid.length < 1 || grid.length > 3)
    throw argError('grid', expected, grid, true);
  const out: [number, number, number] = [1, 1, 1];
  for (let i = 0; i < grid.length; i++) {
    const v: unknown = grid[i];
    if (v === undefined && i > 0) continue;
    if (!isInt(v) || v < 0 || v > U32_MAX) throw argError('grid', expected, grid, true);
    out[i] = v;
  }
  return out;
}

export type Scalar = { kind: 'u32' | 'i32' | 'f32'; value: number };

const SCALAR_EXPECTED =
  'a buffer, or one of { u32 } (integer in 0..2^32-1), { i32 } (integer in -2^31..2^31-1), { f32 } (a number)';

const SCALAR_RANGE = {
  u32: [0, U32_MAX],
  i32: [-0x80000000, 0x7fffffff],
} as const;

/**
 * A scalar kernel argument: exactly one own key, u32 / i32 / f32, with a value in range. The
 * message says which part is wrong: `args[1].u32 must be an integer in 0..4294967295; got -1`.
 */
export function checkScalar(arg: unknown, argument: string): Scalar {
  if (typeof arg !== 'object' || arg === null || Array.isArray(arg))
    throw argError(argument, SCALAR_EXPECTED, arg, true);
  const keys = Object.keys(arg);
  const key = keys.length === 1 ? keys[0] : undefined;
  if (key !== 'u32' && key !== 'i32' && key !== 'f32') {
    const got = keys.length === 0 ? 'no keys' : `keys ${keys.slice(0, 4).join(', ')}`.slice(0, 80);
    throw invalidType(argument, `${SCALAR_EXPECTED}; it has ${got}`, arg);
  }
  const value = (arg as Record<string, unknown>)[key];
  if (key === 'f32') {
    if (typeof value !== 'number') throw invalidType(`${argument}.f32`, 'a number', value);
    return { kind: key, value };
  }
  const [min, max] = SCALAR_RANGE[key];
  return { kind: key, value: checkInteger(value, `${argument}.${key}`, min, max) };
}

export type CheckedArg<B> = { kind: 'buffer'; buffer: B; size: number } | Scalar;

export interface LaunchCheck<B> {
  kernelName: string;
  /** The kernel's parameters when known (built-ins, WGSL reflection); else only shapes are checked. */
  signature?: readonly KernelParam[] | undefined;
  /** This backend's live buffer for `value`, or undefined if `value` is not a buffer at all. */
  buffer(value: unknown, argument: string): { buffer: B; size: number } | undefined;
}

/** Checks a whole launch's arguments before anything is recorded: all or nothing. */
export function checkLaunchArgs<B>(args: unknown, check: LaunchCheck<B>): CheckedArg<B>[] {
  if (!Array.isArray(args)) throw argError('args', 'an array of kernel arguments', args, true);
  const sig = check.signature;
  if (sig && args.length !== sig.length) {
    throw argError(
      'args',
      `${sig.length} arguments for ${check.kernelName}(${sig.map((p) => `${p.name}: ${p.kind}`).join(', ')})`,
      args,
      false,
    );
  }
  const out: CheckedArg<B>[] = (args as readonly KernelArg[]).map((a, i) => {
    const argument = `args[${i}]`;
    const buf = check.buffer(a, argument);
    const checked: CheckedArg<B> = buf ? { kind: 'buffer', ...buf } : checkScalar(a, argument);
    const want: ArgKind | undefined = sig?.[i]?.kind;
    if (want && checked.kind !== want) {
      const name = sig?.[i]?.name ?? argument;
      throw argError(
        `${argument} (${name}) of ${check.kernelName}`,
        want === 'buffer' ? 'a buffer' : `{ ${want}: number }`,
        a,
        true,
      );
    }
    return checked;
  });
  if (sig) checkElements(check.kernelName, sig, out);
  return out;
}

/**
 * The common launch, checked and encoded in one pass with no allocation: a plain grid count.
 * Returns the count, or -1 for anything else (an array grid, a bad value): then checkGrid.
 */
export function gridCount(grid: unknown): number {
  return typeof grid === 'number' && Number.isSafeInteger(grid) && grid >= 0 && grid <= U32_MAX ? grid : -1;
}

/** Kind codes of a launch's words (devexit_protocol.hpp's ArgKind, @devexit/backend's ARG_KIND). */
const KIND_CODE = { buffer: 1, u32: 2, i32: 3, f32: 4 } as const;

/** For each buffer parameter that names its element count: where the count comes from. */
type ElementRule = { param: number; fixed: number; countParam: number };
const elementRules = new WeakMap<readonly KernelParam[], ElementRule[]>();

function rulesOf(sig: readonly KernelParam[]): ElementRule[] {
  let rules = elementRules.get(sig);
  if (!rules) {
    rules = [];
    sig.forEach((p, i) => {
      if (p.kind !== 'buffer' || p.elements === undefined) return;
      if (typeof p.elements === 'number') rules?.push({ param: i, fixed: p.elements, countParam: -1 });
      else rules?.push({ param: i, fixed: 0, countParam: sig.findIndex((q) => q.name === p.elements) });
    });
    elementRules.set(sig, rules);
  }
  return rules;
}

/**
 * The hot path of every native launch: checks `args` against `signature` (when known) and writes
 * them into `words` from `at` as (kind code, value) pairs, in one pass that allocates nothing.
 * It accepts only what checkLaunchArgs accepts, with the same result; for anything else, valid or
 * not, it returns -1 without a throw, and the caller runs checkLaunchArgs, whose errors are the
 * one wording. Otherwise returns the index after the last word written. `bufferId(v)` is the id of
 * `v` when it is a live buffer of this device, else -1. Words past `at` may be written either way:
 * the caller commits them only on success.
 */
export function encodeLaunchArgs(
  args: unknown,
  signature: readonly KernelParam[] | undefined,
  bufferId: (value: unknown) => number,
  words: Float64Array,
  at: number,
): number {
  if (!Array.isArray(args)) return -1;
  const n = args.length;
  if (signature !== undefined && n !== signature.length) return -1;
  let w = at;
  for (let i = 0; i < n; i++) {
    const a: unknown = args[i];
    const want = signature === undefined ? undefined : signature[i]?.kind;
    const id = bufferId(a);
    if (id >= 0) {
      if (want !== undefined && want !== 'buffer') return -1;
      words[w++] = KIND_CODE.buffer;
      words[w++] = id;
      continue;
    }
    // A scalar: an object with exactly one key, its own.
    if (typeof a !== 'object' || a === null || Array.isArray(a)) return -1;
    let key = '';
    let keys = 0;
    for (const k in a) {
      key = k;
      if (++keys > 1) break;
    }
    if (keys !== 1 || !Object.hasOwn(a, key) || (want !== undefined && key !== want)) return -1;
    const v: unknown = (a as Record<string, unknown>)[key];
    if (typeof v !== 'number') return -1;
    if (key === 'u32') {
      if (!Number.isSafeInteger(v) || v < 0 || v > U32_MAX) return -1;
      words[w++] = KIND_CODE.u32;
    } else if (key === 'i32') {
      if (!Number.isSafeInteger(v) || v < -0x80000000 || v > 0x7fffffff) return -1;
      words[w++] = KIND_CODE.i32;
    } else if (key === 'f32') {
      words[w++] = KIND_CODE.f32;
    } else {
      return -1;
    }
    words[w++] = v;
  }
  if (signature !== undefined) {
    for (const r of rulesOf(signature)) {
      let count = r.fixed;
      if (r.countParam >= 0) {
        if (words[at + 2 * r.countParam] === KIND_CODE.buffer) return -1;
        count = words[at + 2 * r.countParam + 1] ?? 0;
      }
      if (count * 4 > (args[r.param] as { size: number }).size) return -1;
    }
  }
  return w;
}

// Buffers must hold the elements the kernel will touch: never a write past a buffer's end.
function checkElements<B>(kernel: string, sig: readonly KernelParam[], args: CheckedArg<B>[]): void {
  sig.forEach((p, i) => {
    if (p.kind !== 'buffer' || p.elements === undefined) return;
    const a = args[i];
    if (a?.kind !== 'buffer') return;
    let count: number;
    if (typeof p.elements === 'number') {
      count = p.elements;
    } else {
      const at = sig.findIndex((q) => q.name === p.elements);
      const v = args[at];
      count = v && v.kind !== 'buffer' ? v.value : 0;
    }
    if (count * 4 > a.size) {
      throw outOfRangeError(
        `${kernel} args[${i}] (${p.name})`,
        `${count} elements`,
        `the buffer holds ${Math.floor(a.size / 4)} 4-byte elements`,
      );
    }
  });
}

/** write(buffer, data, offset) on a buffer of `size` bytes: the bytes to write and where. */
export function checkWrite(
  size: number,
  data: unknown,
  offset: unknown,
): { bytes: Uint8Array; offset: number } {
  const bytes = checkData(data);
  const at = checkSize(offset, 'offset');
  checkRange(size, at, bytes.byteLength, 'write');
  return { bytes, offset: at };
}

/** read(buffer, offset, bytes?) on a buffer of `size` bytes; bytes defaults to the rest. */
export function checkRead(size: number, offset: unknown, bytes: unknown): { offset: number; bytes: number } {
  const at = checkSize(offset, 'offset');
  const n = bytes === undefined ? Math.max(0, size - at) : checkSize(bytes, 'bytes');
  checkRange(size, at, n, 'read');
  return { offset: at, bytes: n };
}

/**
 * fill(buffer, value, offset, bytes?) on a buffer of `size` bytes: a u32 value, offset and bytes
 * multiples of 4; bytes defaults to the whole 4-byte words after offset.
 */
export function checkFill(
  size: number,
  value: unknown,
  offset: unknown,
  bytes: unknown,
): { value: number; offset: number; bytes: number } {
  const v = checkU32(value, 'value');
  const at = checkSize(offset, 'offset');
  if (at % 4 !== 0) throw argError('offset', 'a multiple of 4', at);
  const rest = Math.max(0, size - at);
  const n = bytes === undefined ? rest - (rest % 4) : checkSize(bytes, 'bytes');
  if (n % 4 !== 0) throw argError('bytes', 'a multiple of 4', n);
  checkRange(size, at, n, 'fill');
  return { value: v, offset: at, bytes: n };
}

/** copy(src, dst, bytes?, srcOffset, dstOffset); bytes defaults to what fits in both. */
export function checkCopy(
  srcSize: number,
  dstSize: number,
  bytes: unknown,
  srcOffset: unknown,
  dstOffset: unknown,
): { bytes: number; srcOffset: number; dstOffset: number } {
  const from = checkSize(srcOffset, 'srcOffset');
  const to = checkSize(dstOffset, 'dstOffset');
  const n =
    bytes === undefined ? Math.max(0, Math.min(srcSize - from, dstSize - to)) : checkSize(bytes, 'bytes');
  checkRange(srcSize, from, n, 'copy from src');
  checkRange(dstSize, to, n, 'copy to dst');
  return { bytes: n, srcOffset: from, dstOffset: to };
}

/** Not a buffer of this device object (another device, another realm, a closed device's). */
export function foreignBufferError(argument: string, device: string, value: unknown): TypeError {
  return argError(argument, `a buffer allocated on ${device} in this realm`, value, true);
}

/** A buffer that was freed. */
export function freedBufferError(what: string, argument: string): TypeError {
  return new DevexitTypeError('ERR_INVALID_ARG_VALUE', `devexit: cannot ${what}: ${argument} was freed`);
}

/** Not a kernel of this device object. */
export function foreignKernelError(device: string, value: unknown): TypeError {
  return argError('kernel', `a kernel from kernel() or loadKernel() of ${device}`, value, true);
}

/** A built-in kernel's name: its index in BUILTIN_KERNELS (launched as kernel id -1 - index). */
export function checkBuiltinName(name: unknown): number {
  const i = typeof name === 'string' ? BUILTIN_KERNELS.indexOf(name as BuiltinKernelName) : -1;
  if (i < 0) {
    throw argError(
      'name',
      `a built-in kernel (${BUILTIN_KERNELS.join(', ')})`,
      name,
      typeof name !== 'string',
    );
  }
  return i;
}

/** loadKernel's source: a string or a Uint8Array; `expected` says what this backend takes. */
export function checkKernelSource(source: unknown, expected: string): string | Uint8Array {
  if (typeof source !== 'string' && !(source instanceof Uint8Array))
    throw argError('source', expected, source, true);
  return source;
}

/** A kernel entry-point name: a C / WGSL identifier. */
export function checkEntry(entry: unknown): string {
  if (typeof entry !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]{0,254}$/.test(entry)) {
    throw argError('entry', 'a function name (a C identifier)', entry, typeof entry !== 'string');
  }
  return entry;
}

/**
 * An options object taking `keys`, or undefined (then {}). A key it does not take is refused, as
 * core's functions refuse one (a misspelt `signal` would otherwise be ignored without a word).
 */
export function checkOptions<T extends object>(
  options: unknown,
  keys: readonly (keyof T & string)[],
  argument = 'options',
): Partial<T> {
  if (options === undefined) return {};
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw argError(argument, `an object { ${keys.join(', ')} }`, options, true);
  }
  for (const key of Object.keys(options)) {
    if (keys.includes(key as keyof T & string)) continue;
    throw new DevexitTypeError(
      'ERR_INVALID_ARG_VALUE',
      `devexit: ${argument} has an unknown option ${describeValue(key)}; it takes ${keys.join(', ')}`,
    );
  }
  return options as Partial<T>;
}

const vendorErrorProperties = new Map<string, string>();

/**
 * Also sets a backend's vendor error name under a property of its own on its errors, besides
 * `vendorError` (hip: `hipError`, cuda: `cudaError`), where the backend's users look for it.
 */
export function setVendorErrorProperty(backend: string, property: string): void {
  vendorErrorProperties.set(backend, property);
}

/** The backend failed: ERR_DEVEXIT_BACKEND, with the vendor's error name when there is one. */
export function backendError(backend: string, message: string, vendorError?: string): BackendError {
  const err = new DevexitError('ERR_DEVEXIT_BACKEND', `devexit: ${backend}: ${message}`) as BackendError;
  if (vendorError) {
    err.vendorError = vendorError;
    const property = vendorErrorProperties.get(backend);
    if (property) (err as unknown as Record<string, unknown>)[property] = vendorError;
  }
  return err;
}

/** An ERR_DEVEXIT_BACKEND error; vendorError names the runtime's error (CUDA_ERROR_..., hipError...). */
export interface BackendError extends DevexitError {
  vendorError?: string;
}
