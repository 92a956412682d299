import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Backend,
  BUILTIN_KERNELS,
  type BuiltinKernelName,
  DevexitError,
  type Device,
  type DeviceBuffer,
  type DeviceId,
  describeValue as describe,
  deviceClosedError,
  deviceId,
  exitingError,
  type Grid,
  isExiting,
  type Kernel,
  type KernelArg,
  outOfRangeError,
  type ProbeResult,
  type Queue,
  unavailableError,
} from '@devexit/core';
import { type CpuAddon, loadAddon, type NativeHandle, Status } from './addon.js';

const VERSION: string = (require('../package.json') as { version: string }).version;
const MAX_DEVICES = 64;

/** Argument kinds of the kernel ABI (include/devexit_cpu_kernel.h). */
const ARG = { buffer: 1, u32: 2, i32: 3, f32: 4 } as const;

function typeError(argument: string, want: string, got: unknown): TypeError {
  return new TypeError(`devexit: cpu: ${argument} must be ${want}; got ${describe(got)}`);
}

function checkSize(v: unknown, argument: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
    throw typeError(argument, 'a non-negative integer', v);
  return v;
}

/** DEVEXIT_CPU_DEVICES (default 1): how many devices, each its own queue thread and pool. */
export function configuredDeviceCount(env: NodeJS.ProcessEnv = process.env): number | string {
  const raw = env.DEVEXIT_CPU_DEVICES;
  if (raw === undefined || raw === '') return 1;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > MAX_DEVICES) {
    return `DEVEXIT_CPU_DEVICES must be an integer in 1..${MAX_DEVICES}; got ${JSON.stringify(raw)}`;
  }
  return n;
}

/** DEVEXIT_CPU_THREADS: threads per device (queue thread included); 0 = min(cores, 8). */
function configuredThreads(): number {
  const n = Number(process.env.DEVEXIT_CPU_THREADS ?? 0);
  return Number.isInteger(n) && n >= 0 && n <= 256 ? n : 0;
}

const BUFFER_ID = Symbol('devexit.cpu.buffer');
const KERNEL_ID = Symbol('devexit.cpu.kernel');

class CpuBuffer implements DeviceBuffer {
  readonly device: DeviceId;
  readonly size: number;
  readonly [BUFFER_ID]: { id: number; owner: CpuDevice; freed: boolean };
  constructor(owner: CpuDevice, id: number, size: number) {
    this.device = owner.id;
    this.size = size;
    this[BUFFER_ID] = { id, owner, freed: false };
  }
}

class CpuKernel implements Kernel {
  readonly name: string;
  readonly [KERNEL_ID]: number;
  constructor(name: string, id: number) {
    this.name = name;
    this[KERNEL_ID] = id;
  }
}

function rejectWith<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return fn();
  } catch (err) {
    return Promise.reject(err);
  }
}

class CpuQueue implements Queue {
  readonly #device: CpuDevice;
  readonly #addon: CpuAddon;
  readonly #h: NativeHandle;

  constructor(device: CpuDevice, addon: CpuAddon, h: NativeHandle) {
    this.#device = device;
    this.#addon = addon;
    this.#h = h;
  }

  #fail(status: number, what: string): Error {
    switch (status) {
      case Status.closed:
        return isExiting() ? exitingError(what) : deviceClosedError(this.#device.id, what);
      case Status.exiting:
        return exitingError(what);
      case Status.badBuffer:
        return new TypeError(`devexit: cpu: cannot ${what}: buffer was freed or belongs to another device`);
      case Status.outOfRange:
        return outOfRangeError(
          `${what}: range`,
          'past the end of the buffer',
          'offset + bytes <= buffer.size',
        );
      case Status.badArgs:
        return new TypeError(`devexit: cpu: cannot ${what}: args do not match the kernel's signature`);
      default:
        return new DevexitError(
          'ERR_DEVEXIT_BACKEND',
          `devexit: cpu: cannot ${what}: native status ${status}`,
        );
    }
  }

  #open(what: string): void {
    if (this.#device.closed) throw this.#fail(Status.closed, what);
  }

  #buffer(v: unknown, argument: string, what: string): number {
    const state = v instanceof CpuBuffer ? v[BUFFER_ID] : undefined;
    if (!state || state.owner.id.index !== this.#device.id.index) {
      throw typeError(argument, `a buffer allocated on ${this.#device.name}`, v);
    }
    if (state.freed) throw new TypeError(`devexit: cpu: cannot ${what}: ${argument} was freed`);
    return state.id;
  }

  #range(size: number, offset: number, bytes: number, what: string): void {
    if (offset + bytes > size) {
      throw outOfRangeError(`${what}: offset + bytes`, offset + bytes, `the buffer holds ${size} bytes`);
    }
  }

  alloc(bytes: number): DeviceBuffer {
    checkSize(bytes, 'bytes');
    this.#open('alloc');
    const id = this.#addon.alloc(this.#h, bytes);
    if (id < 0) {
      if (-id === Status.outOfRange) {
        throw new DevexitError(
          'ERR_DEVEXIT_BACKEND',
          `devexit: cpu: cannot allocate ${bytes} bytes: out of memory`,
        );
      }
      throw this.#fail(-id, 'alloc');
    }
    return new CpuBuffer(this.#device, id, bytes);
  }

  free(buffer: DeviceBuffer): void {
    const id = this.#buffer(buffer, 'buffer', 'free');
    this.#open('free');
    const status = this.#addon.free(this.#h, id);
    if (status !== Status.ok) throw this.#fail(status, 'free');
    (buffer as CpuBuffer)[BUFFER_ID].freed = true;
  }

  write(buffer: DeviceBuffer, data: ArrayBufferView, offset = 0): void {
    const id = this.#buffer(buffer, 'buffer', 'write');
    if (!ArrayBuffer.isView(data))
      throw typeError('data', 'an ArrayBufferView (a typed array or DataView)', data);
    checkSize(offset, 'offset');
    this.#range(buffer.size, offset, data.byteLength, 'write');
    this.#open('write');
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    const status = this.#addon.write(this.#h, id, offset, bytes);
    if (status !== Status.ok) throw this.#fail(status, 'write');
  }

  read(buffer: DeviceBuffer, offset = 0, bytes?: number): Promise<Uint8Array> {
    return rejectWith(() => {
      const id = this.#buffer(buffer, 'buffer', 'read');
      checkSize(offset, 'offset');
      const n = bytes === undefined ? Math.max(0, buffer.size - offset) : checkSize(bytes, 'bytes');
      this.#range(buffer.size, offset, n, 'read');
      this.#open('read');
      const r = this.#addon.read(this.#h, id, offset, n);
      if (typeof r === 'number') throw this.#fail(r, 'read');
      return r;
    });
  }

  fill(buffer: DeviceBuffer, value: number, offset = 0, bytes?: number): void {
    const id = this.#buffer(buffer, 'buffer', 'fill');
    if (typeof value !== 'number' || !Number.isInteger(value) || value < -0x80000000 || value > 0xffffffff) {
      throw typeError('value', 'an integer that fits 32 bits', value);
    }
    checkSize(offset, 'offset');
    const n = bytes === undefined ? Math.max(0, buffer.size - offset) : checkSize(bytes, 'bytes');
    if (offset % 4 !== 0) throw typeError('offset', 'a multiple of 4', offset);
    if (n % 4 !== 0) throw typeError('bytes', 'a multiple of 4', n);
    this.#range(buffer.size, offset, n, 'fill');
    this.#open('fill');
    const status = this.#addon.fill(this.#h, id, value >>> 0, offset, n);
    if (status !== Status.ok) throw this.#fail(status, 'fill');
  }

  copy(src: DeviceBuffer, dst: DeviceBuffer, bytes?: number, srcOffset = 0, dstOffset = 0): void {
    const s = this.#buffer(src, 'src', 'copy');
    const d = this.#buffer(dst, 'dst', 'copy');
    checkSize(srcOffset, 'srcOffset');
    checkSize(dstOffset, 'dstOffset');
    const n =
      bytes === undefined
        ? Math.max(0, Math.min(src.size - srcOffset, dst.size - dstOffset))
        : checkSize(bytes, 'bytes');
    this.#range(src.size, srcOffset, n, 'copy from src');
    this.#range(dst.size, dstOffset, n, 'copy to dst');
    this.#open('copy');
    const status = this.#addon.copy(this.#h, s, d, n, srcOffset, dstOffset);
    if (status !== Status.ok) throw this.#fail(status, 'copy');
  }

  launch(kernel: Kernel, grid: Grid, args: readonly KernelArg[]): void {
    if (!(kernel instanceof CpuKernel))
      throw typeError('kernel', 'a kernel from device.kernel() or loadKernel()', kernel);
    const total = gridSize(grid);
    if (!Array.isArray(args)) throw typeError('args', 'an array of kernel arguments', args);
    const kinds = new Uint32Array(args.length);
    const values = new Float64Array(args.length);
    args.forEach((a, i) => {
      if (a instanceof CpuBuffer) {
        kinds[i] = ARG.buffer;
        values[i] = this.#buffer(a, `args[${i}]`, 'launch');
        return;
      }
      const o = (typeof a === 'object' && a !== null ? a : {}) as Record<string, unknown>;
      const keys = Object.keys(o);
      const key = keys.length === 1 ? keys[0] : undefined;
      const v = key === undefined ? undefined : o[key];
      const ok =
        typeof v === 'number' &&
        ((key === 'u32' && Number.isInteger(v) && v >= 0 && v <= 0xffffffff) ||
          (key === 'i32' && Number.isInteger(v) && v >= -0x80000000 && v <= 0x7fffffff) ||
          key === 'f32');
      if (!ok)
        throw typeError(
          `args[${i}]`,
          'a buffer or one of { u32 }, { i32 }, { f32 } with a value in range',
          a,
        );
      kinds[i] = ARG[key as 'u32' | 'i32' | 'f32'];
      values[i] = v as number;
    });
    this.#open('launch');
    const status = this.#addon.launch(this.#h, kernel[KERNEL_ID], total, kinds, values);
    if (status !== Status.ok) throw this.#fail(status, `launch ${kernel.name}`);
  }

  flush(): Promise<void> {
    return rejectWith(() => {
      this.#open('flush');
      const r = this.#addon.flush(this.#h);
      if (typeof r === 'number') throw this.#fail(r, 'flush');
      return r;
    });
  }
}

function gridSize(grid: Grid): number {
  const dims = typeof grid === 'number' ? [grid] : Array.isArray(grid) ? grid.map((d) => d ?? 1) : undefined;
  if (!dims || dims.length === 0 || dims.length > 3 || dims.some((d) => !Number.isSafeInteger(d) || d < 0)) {
    throw typeError('grid', 'a non-negative integer or [x, y?, z?]', grid);
  }
  const total = dims.reduce((a, b) => a * b, 1);
  if (!Number.isSafeInteger(total)) throw typeError('grid', 'a grid of at most 2^53 invocations', grid);
  return total;
}

class CpuDevice implements Device {
  readonly id: DeviceId;
  readonly backend = 'cpu';
  readonly name: string;
  readonly #addon: CpuAddon;
  readonly #h: NativeHandle;
  #queue: CpuQueue | undefined;
  #closing: Promise<void> | undefined;
  #closed = false;

  constructor(addon: CpuAddon, index: number) {
    this.#addon = addon;
    this.#h = addon.open(index, configuredThreads());
    this.id = deviceId('cpu', index);
    this.name = `cpu (${addon.threads(this.#h)} threads)`;
  }

  get closed(): boolean {
    return this.#closed || this.#addon.closed(this.#h);
  }

  queue(): Queue {
    if (this.closed)
      throw isExiting() ? exitingError('start the cpu queue') : deviceClosedError(this.id, 'queue()');
    if (this.#queue) return this.#queue;
    if (isExiting()) throw exitingError('start the cpu queue');
    const status = this.#addon.start(this.#h);
    if (status === Status.exiting) throw exitingError('start the cpu queue');
    if (status === Status.closed) throw deviceClosedError(this.id, 'queue()');
    this.#queue = new CpuQueue(this, this.#addon, this.#h);
    return this.#queue;
  }

  kernel(name: BuiltinKernelName): Kernel {
    if (!BUILTIN_KERNELS.includes(name))
      throw typeError('name', `one of ${BUILTIN_KERNELS.join(', ')}`, name);
    if (this.closed) throw deviceClosedError(this.id, 'kernel()');
    return new CpuKernel(name, this.#addon.builtin(name));
  }

  async loadKernel(source: string | Uint8Array, entry: string): Promise<Kernel> {
    if (this.closed) throw deviceClosedError(this.id, 'loadKernel()');
    if (typeof entry !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(entry)) {
      throw typeError('entry', 'a C identifier', entry);
    }
    let path: string;
    if (typeof source === 'string' && source.length > 0) {
      path = source;
    } else if (source instanceof Uint8Array) {
      // dlopen needs a file: the bytes go to a private temp dir, kept (the object is never unloaded).
      path = join(mkdtempSync(join(tmpdir(), 'devexit-cpu-')), 'kernel.so');
      writeFileSync(path, source, { mode: 0o700 });
    } else {
      throw typeError('source', 'a shared-object path or its bytes (Uint8Array)', source);
    }
    try {
      return new CpuKernel(entry, this.#addon.loadKernel(path, entry));
    } catch (err) {
      throw new DevexitError(
        'ERR_DEVEXIT_BACKEND',
        `devexit: cpu: cannot load kernel ${entry} from ${path}: ${(err as Error).message}`,
        { cause: err },
      );
    }
  }

  /**
   * Finishes everything enqueued before it (from any realm), then joins the queue thread and
   * pool, frees the buffers and unregisters the exit close. Idempotent.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#closed = true;
    const drained = this.#addon.drain(this.#h);
    if (drained) await drained;
    this.#addon.finishClose(this.#h);
    if (devices.get(this.id.index) === this) devices.delete(this.id.index);
  }
}

// This realm's devices: one JS handle per device per realm; the native device is process-wide.
const devices = new Map<number, CpuDevice>();

function checkIndex(index: unknown): number {
  if (typeof index !== 'number' || !Number.isInteger(index) || index < 0) {
    throw typeError('index', 'a non-negative integer', index);
  }
  return index;
}

export const backend: Backend = {
  name: 'cpu',

  async probe(): Promise<ProbeResult> {
    const count = configuredDeviceCount();
    const versions: Record<string, string> = { '@devexit/cpu': VERSION, node: process.versions.node };
    if (typeof count === 'string') return { available: false, reason: count, versions };
    let info: ReturnType<CpuAddon['probe']>;
    try {
      info = loadAddon().probe();
    } catch (err) {
      return { available: false, reason: (err as Error).message, versions };
    }
    versions.compiler = info.compiler;
    versions.kernelAbi = String(info.kernelAbi);
    if (!info.registry)
      return { available: false, reason: info.registryError ?? 'registry not found', versions };
    const threads = configuredThreads() || info.defaultThreads;
    return { available: true, devices: count, versions, details: `${threads} threads per device` };
  },

  async deviceCount(): Promise<number> {
    const probe = await this.probe();
    if (!probe.available) throw unavailableError('cpu', probe.reason);
    return probe.devices;
  },

  async open(index: number): Promise<Device> {
    checkIndex(index);
    const count = await this.deviceCount();
    if (index >= count) throw outOfRangeError('cpu device index', index, `0..${count - 1}`);
    const known = devices.get(index);
    if (known && !known.closed) return known;
    const device = new CpuDevice(loadAddon(), index);
    devices.set(index, device);
    return device;
  },
};

export type { CpuAddon } from './addon.js';
