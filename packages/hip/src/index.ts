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
import { type HipBinding, loadBinding, loadFailure, type NativeDevice, type NativeProbe } from './binding.js';

export type { NativeCompilerState } from './binding.js';

const NAME = 'hip';

/** A DevexitError carrying the HIP or hiprtc error name (hipErrorNoDevice, HIPRTC_ERROR_COMPILATION). */
export interface HipError extends DevexitError {
  hipError?: string;
}

function backendError(message: string, hipError?: string): HipError {
  const err = new DevexitError('ERR_DEVEXIT_BACKEND', `devexit: ${message}`) as HipError;
  if (hipError) err.hipError = hipError.replace(/ \(-?\d+\)$/, '');
  return err;
}

/** Native errors carry a devexit code; give them the DevexitError class. */
function rethrow(err: unknown): never {
  const e = err as { code?: string; message?: string };
  if (
    e &&
    typeof e.code === 'string' &&
    e.code.startsWith('ERR_DEVEXIT_') &&
    !(err instanceof DevexitError)
  ) {
    throw new DevexitError(e.code as DevexitError['code'], e.message ?? String(err));
  }
  throw err;
}

function checkIndex(v: unknown, what: string, max = 0xffffffff): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > max) {
    throw new TypeError(`devexit: ${what} must be an integer in 0..${max}; got ${describe(v)}`);
  }
  return v;
}

// ---- completions from the service threads ----

interface Pending {
  resolve: (r: { data: Uint8Array | undefined; value: number }) => void;
  reject: (e: Error) => void;
  owner: Set<number> | undefined;
}

const pending = new Map<number, Pending>();
let nextId = 1;
let dispatcherInstalled = false;

function binding(): HipBinding {
  const b = loadBinding();
  if (!b) throw unavailableError(NAME, loadFailure() ?? 'the addon did not load');
  if (!dispatcherInstalled) {
    b.setDispatcher((id, error, hipError, data, value, dropped) => {
      const p = pending.get(id);
      if (!p) return;
      pending.delete(id);
      p.owner?.delete(id);
      if (pending.size === 0) b.setRef(false);
      if (error === null) p.resolve({ data, value });
      else if (dropped) p.reject(new DevexitError('ERR_DEVEXIT_DEVICE_CLOSED', `devexit: ${error}`));
      else p.reject(backendError(error, hipError));
    });
    dispatcherInstalled = true;
  }
  return b;
}

/** A promise settled by a service thread; keeps the event loop alive while it is pending. */
function expect(owner: Set<number> | undefined, start: (id: number) => void) {
  const b = binding();
  const id = nextId++;
  return new Promise<{ data: Uint8Array | undefined; value: number }>((resolve, reject) => {
    try {
      start(id);
    } catch (err) {
      reject(err);
      return;
    }
    pending.set(id, { resolve, reject, owner });
    owner?.add(id);
    if (pending.size === 1) b.setRef(true);
  });
}

// ---- probe ----

function formatVersion(v: number): string {
  return `${Math.floor(v / 10000000)}.${Math.floor(v / 100000) % 100}.${v % 100000}`;
}

let probed: NativeProbe | undefined;

function nativeProbe(): NativeProbe {
  if (probed) return probed;
  const b = loadBinding();
  probed = b ? b.probe() : { loaded: false, error: loadFailure() ?? 'the addon did not load' };
  return probed;
}

function versionsOf(p: NativeProbe): Record<string, string> {
  const v = p.versions;
  if (!v) return {};
  const out: Record<string, string> = {
    library: v.path,
    runtime: formatVersion(v.runtimeVersion),
    driver: formatVersion(v.driverVersion),
  };
  if (v.hiprtc) out.hiprtc = v.hiprtcVersion ? `${v.hiprtc} (${v.hiprtcVersion})` : v.hiprtc;
  if (v.standin) out.standin = v.standin;
  return out;
}

function unavailableReason(p: NativeProbe): string | undefined {
  if (!p.loaded) return `library missing: ${p.error}`;
  if (p.countStatus !== 0 || !p.count) {
    return `no HIP device: hipGetDeviceCount returned ${p.countName} (hipInit returned ${p.initName})`;
  }
  return undefined;
}

// ---- buffers, kernels ----

const BUILTIN_SIGNATURES: Record<BuiltinKernelName, readonly ('buffer' | 'u32' | 'f32')[]> = {
  fill_u32: ['buffer', 'u32', 'u32'],
  copy: ['buffer', 'buffer', 'u32'],
  saxpy_f32: ['buffer', 'buffer', 'f32', 'u32'],
  sum_f32: ['buffer', 'buffer', 'u32'],
};

class HipBuffer implements DeviceBuffer {
  freed = false;
  constructor(
    readonly device: DeviceId,
    readonly size: number,
    readonly owner: HipDevice,
    readonly id: number,
  ) {}
}

class HipKernel implements Kernel {
  constructor(
    readonly name: string,
    readonly owner: HipDevice,
    /** < 0: built-in number -1 - id. */
    readonly id: number,
    readonly builtin: BuiltinKernelName | undefined,
  ) {}
}

const ARG_KIND = { buffer: 0, u32: 1, i32: 2, f32: 3 } as const;
const f32Bits = new DataView(new ArrayBuffer(4));

function checkGrid(grid: unknown): [number, number, number] {
  const dims = typeof grid === 'number' ? [grid] : Array.isArray(grid) ? grid : undefined;
  const ok = (v: unknown) => typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= 0xffffffff;
  if (
    !dims ||
    dims.length < 1 ||
    dims.length > 3 ||
    !ok(dims[0]) ||
    !dims.slice(1).every((d) => d === undefined || ok(d))
  ) {
    throw new TypeError(
      `devexit: grid must be a positive integer or [x, y?, z?] of positive integers; got ${describe(grid)}`,
    );
  }
  return [dims[0] as number, (dims[1] as number | undefined) ?? 1, (dims[2] as number | undefined) ?? 1];
}

// ---- the device and its queue service ----

class HipDevice implements Device {
  readonly backend = NAME;
  readonly id: DeviceId;
  closed = false;
  private native: NativeDevice | undefined;
  private q: HipQueue | undefined;
  private closing: Promise<void> | undefined;
  readonly pending = new Set<number>();

  constructor(
    readonly index: number,
    readonly name: string,
    /** The target hiprtc compiles for ("gfx90a:sramecc+:xnack-"), when the runtime tells. */
    readonly arch: string,
  ) {
    this.id = deviceId(NAME, index);
  }

  check(what: string): void {
    if (this.closed) throw deviceClosedError(this.id, what);
    if (isExiting()) throw exitingError(what);
  }

  nativeQueue(what: string): NativeDevice {
    this.check(what);
    if (!this.native) {
      try {
        this.native = binding().openQueue(this.index, this.arch);
      } catch (err) {
        rethrow(err);
      }
    }
    return this.native;
  }

  queue(): Queue {
    this.nativeQueue('start the queue');
    this.q ??= new HipQueue(this);
    return this.q;
  }

  kernel(name: BuiltinKernelName): Kernel {
    const i = BUILTIN_KERNELS.indexOf(name);
    if (typeof name !== 'string' || i < 0) {
      throw new TypeError(
        `devexit: name must be a built-in kernel (${BUILTIN_KERNELS.join(', ')}); got ${describe(name)}`,
      );
    }
    this.check(`get kernel ${name}`);
    return new HipKernel(name, this, -1 - i, name);
  }

  async loadKernel(source: string | Uint8Array, entry: string): Promise<Kernel> {
    if (typeof entry !== 'string' || entry.length === 0) {
      throw new TypeError(`devexit: entry must be a kernel name; got ${describe(entry)}`);
    }
    if (typeof source !== 'string' && !(source instanceof Uint8Array)) {
      throw new TypeError(
        `devexit: source must be HIP C++ (a string) or a code object (Uint8Array); got ${describe(source)}`,
      );
    }
    this.check('load a kernel');
    const code =
      typeof source === 'string'
        ? await compileOn(this.index, source, {
            ...(this.arch ? { arch: this.arch } : {}),
            name: `${entry}.hip`,
          })
        : source;
    const dev = this.nativeQueue('load a kernel');
    const { value } = await expect(this.pending, (id) => binding().loadModule(dev, code, entry, id));
    return new HipKernel(entry, this, value, undefined);
  }

  close(): Promise<void> {
    this.closing ??= this.doClose();
    return this.closing;
  }

  private async doClose(): Promise<void> {
    const dev = this.native;
    if (dev && !this.closed) {
      // Queued work finishes first: every read and flush enqueued before close() settles with its result.
      const done = expect(this.pending, (id) => binding().flush(dev, id)).catch(() => undefined);
      this.closed = true;
      await done;
    }
    this.closed = true;
    devices.delete(this.index);
    if (dev) {
      const err = binding().closeQueue(dev);
      for (const id of [...this.pending]) {
        const p = pending.get(id);
        pending.delete(id);
        p?.reject(deviceClosedError(this.id, 'finish queued work'));
      }
      this.pending.clear();
      if (pending.size === 0) binding().setRef(false);
      if (err) throw backendError(err);
    }
  }
}

class HipQueue implements Queue {
  constructor(private readonly device: HipDevice) {}

  private dev(what: string): NativeDevice {
    return this.device.nativeQueue(what);
  }

  private buf(b: unknown, argument = 'buffer'): HipBuffer {
    if (!(b instanceof HipBuffer) || b.owner !== this.device) {
      throw new TypeError(
        `devexit: ${argument} must be a buffer allocated on ${NAME}:${this.device.index}; got ${describe(b)}`,
      );
    }
    if (b.freed) throw new TypeError(`devexit: ${argument} was freed`);
    return b;
  }

  private range(b: HipBuffer, offset: unknown, bytes: unknown, what: string): [number, number] {
    const off = offset === undefined ? 0 : checkIndex(offset, `${what} offset`, Number.MAX_SAFE_INTEGER);
    const len =
      bytes === undefined
        ? Math.max(0, b.size - off)
        : checkIndex(bytes, `${what} bytes`, Number.MAX_SAFE_INTEGER);
    if (off + len > b.size)
      throw outOfRangeError(`${what} range`, `${off}+${len}`, `buffer of ${b.size} bytes`);
    return [off, len];
  }

  alloc(bytes: number): DeviceBuffer {
    if (
      typeof bytes !== 'number' ||
      !Number.isInteger(bytes) ||
      bytes < 1 ||
      bytes > Number.MAX_SAFE_INTEGER
    ) {
      throw new TypeError(`devexit: bytes must be a positive integer; got ${describe(bytes)}`);
    }
    const dev = this.dev('allocate');
    try {
      return new HipBuffer(this.device.id, bytes, this.device, binding().alloc(dev, bytes));
    } catch (err) {
      rethrow(err);
    }
  }

  free(buffer: DeviceBuffer): void {
    const b = this.buf(buffer);
    const dev = this.dev('free');
    b.freed = true;
    try {
      binding().free(dev, b.id);
    } catch (err) {
      rethrow(err);
    }
  }

  write(buffer: DeviceBuffer, data: ArrayBufferView, offset?: number): void {
    const b = this.buf(buffer);
    if (!ArrayBuffer.isView(data))
      throw new TypeError(`devexit: data must be a TypedArray or DataView; got ${describe(data)}`);
    const dev = this.dev('write');
    const [off] = this.range(b, offset, data.byteLength, 'write');
    try {
      binding().write(dev, b.id, off, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    } catch (err) {
      rethrow(err);
    }
  }

  read(buffer: DeviceBuffer, offset?: number, bytes?: number): Promise<Uint8Array> {
    try {
      const b = this.buf(buffer);
      const dev = this.dev('read');
      const [off, len] = this.range(b, offset, bytes, 'read');
      return expect(this.device.pending, (id) => binding().read(dev, b.id, off, len, id)).then(
        (r) => r.data ?? new Uint8Array(0),
      );
    } catch (err) {
      return Promise.reject(err);
    }
  }

  fill(buffer: DeviceBuffer, value: number, offset?: number, bytes?: number): void {
    const b = this.buf(buffer);
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 0xffffffff) {
      throw new TypeError(`devexit: value must be a u32; got ${describe(value)}`);
    }
    const dev = this.dev('fill');
    const [off, len] = this.range(b, offset, bytes, 'fill');
    if (off % 4 || len % 4)
      throw new TypeError(`devexit: fill offset and bytes must be multiples of 4; got ${off}, ${len}`);
    try {
      binding().fill(dev, b.id, value, off, len);
    } catch (err) {
      rethrow(err);
    }
  }

  copy(src: DeviceBuffer, dst: DeviceBuffer, bytes?: number, srcOffset?: number, dstOffset?: number): void {
    const s = this.buf(src, 'src');
    const d = this.buf(dst, 'dst');
    const dev = this.dev('copy');
    const [so, len] = this.range(s, srcOffset, bytes, 'copy source');
    const [dof] = this.range(d, dstOffset, len, 'copy destination');
    try {
      binding().copy(dev, s.id, d.id, len, so, dof);
    } catch (err) {
      rethrow(err);
    }
  }

  launch(kernel: Kernel, grid: Grid, args: readonly KernelArg[]): void {
    if (!(kernel instanceof HipKernel) || kernel.owner !== this.device) {
      throw new TypeError(
        `devexit: kernel must come from kernel() or loadKernel() of ${NAME}:${this.device.index}; got ${describe(kernel)}`,
      );
    }
    const [gx, gy, gz] = checkGrid(grid);
    if (!Array.isArray(args)) throw new TypeError(`devexit: args must be an array; got ${describe(args)}`);
    const kinds = new Uint8Array(args.length);
    const values = new Float64Array(args.length);
    const sig = kernel.builtin ? BUILTIN_SIGNATURES[kernel.builtin] : undefined;
    if (sig && sig.length !== args.length) {
      throw new TypeError(
        `devexit: args of ${kernel.name} must be (${sig.join(', ')}); got ${args.length} arguments`,
      );
    }
    args.forEach((a: unknown, i) => {
      const bad = (why: string) =>
        new TypeError(`devexit: args[${i}] of ${kernel.name} ${why}; got ${describe(a)}`);
      let kind: keyof typeof ARG_KIND;
      if (a instanceof HipBuffer) {
        this.buf(a, `args[${i}]`);
        kind = 'buffer';
        values[i] = a.id;
      } else if (a && typeof a === 'object' && Object.keys(a).length === 1) {
        const [k, v] = Object.entries(a)[0]!;
        if (k === 'u32' && Number.isInteger(v) && v >= 0 && v <= 0xffffffff) values[i] = v;
        else if (k === 'i32' && Number.isInteger(v) && v >= -0x80000000 && v <= 0x7fffffff) values[i] = v;
        else if (k === 'f32' && typeof v === 'number') {
          f32Bits.setFloat32(0, v, true);
          values[i] = f32Bits.getUint32(0, true);
        } else throw bad('must be a buffer, { u32 }, { i32 } or { f32 } with a value in range');
        kind = k as keyof typeof ARG_KIND;
      } else {
        throw bad('must be a buffer, { u32 }, { i32 } or { f32 }');
      }
      if (sig && sig[i] !== kind) throw bad(`must be ${sig[i] === 'buffer' ? 'a buffer' : `{ ${sig[i]} }`}`);
      kinds[i] = ARG_KIND[kind];
    });
    const dev = this.dev('launch');
    try {
      binding().launch(dev, kernel.id, gx, gy, gz, kinds, values);
    } catch (err) {
      rethrow(err);
    }
  }

  flush(): Promise<void> {
    try {
      const dev = this.dev('flush');
      return expect(this.device.pending, (id) => binding().flush(dev, id)).then(() => undefined);
    } catch (err) {
      return Promise.reject(err);
    }
  }
}

const devices = new Map<number, HipDevice>();

// ---- hiprtc ----

export interface CompileOptions {
  /** The target ("gfx90a", "gfx1030", with features "gfx90a:xnack-"). Omitted: hiprtc's default (the current device). */
  arch?: string;
  /** More hiprtc options ("-O3", "-DNAME=1"). */
  options?: readonly string[];
  /** The program's file name in diagnostics. */
  name?: string;
}

function compileOn(device: number, source: string, options: CompileOptions): Promise<Uint8Array> {
  if (typeof source !== 'string')
    throw new TypeError(`devexit: source must be HIP C++ (a string); got ${describe(source)}`);
  const extra = options.options ?? [];
  if (!Array.isArray(extra) || !extra.every((o) => typeof o === 'string')) {
    throw new TypeError(`devexit: options.options must be an array of strings; got ${describe(extra)}`);
  }
  if (
    options.arch !== undefined &&
    (typeof options.arch !== 'string' || !/^gfx[0-9a-f]+(:[a-z-]+[+-])*$/.test(options.arch))
  ) {
    throw new TypeError(
      `devexit: options.arch must be a target such as "gfx90a"; got ${describe(options.arch)}`,
    );
  }
  if (isExiting()) throw exitingError('compile');
  const opts = [...(options.arch ? [`--offload-arch=${options.arch}`] : []), ...extra];
  const b = binding();
  return expect(undefined, (id) => {
    try {
      b.compile(source, options.name ?? 'program.hip', opts, device, id);
    } catch (err) {
      rethrow(err);
    }
  }).then((r) => r.data ?? new Uint8Array(0));
}

/**
 * Compiles HIP C++ to a code object with hiprtc, on the compiler service (its own thread, started
 * on first use, closed at exit). Needs no device when `arch` is given. On ROCm 5.x, targets its
 * code-object compiler does not know (gfx940+, gfx11xx) are refused with an error instead of
 * letting it abort the process.
 */
export async function compile(source: string, options: CompileOptions = {}): Promise<Uint8Array> {
  if (typeof options !== 'object' || options === null)
    throw new TypeError(`devexit: options must be an object; got ${describe(options)}`);
  return compileOn(-1, source, options);
}

/** The HIP C++ of the built-in kernels (fill_u32, copy, saxpy_f32, sum_f32). */
export function builtinKernelSource(): string {
  return binding().builtinSource();
}

export interface CompilerOptions {
  /**
   * Diagnostic keepalive: while idle, the compiler thread calls hipGetDeviceCount every this
   * many microseconds (0: back to back). Off by default; it keeps the thread inside HIP, which
   * the exit-race test needs.
   */
  idlePollUs?: number;
}

/**
 * Starts the hiprtc compiler service now (compile() starts it on first use) and returns what
 * its thread's HIP initialisation returned. The service is registered as `hip-host:0/compiler`.
 */
export function startCompiler(options: CompilerOptions = {}) {
  const poll = options.idlePollUs;
  if (poll !== undefined) checkIndex(poll, 'options.idlePollUs', 10_000_000);
  // No probe first: the compiler thread may be the process's first HIP user.
  if (isExiting()) throw exitingError('start the hiprtc compiler');
  try {
    return binding().startCompiler(poll ?? -1);
  } catch (err) {
    rethrow(err);
  }
}

/** The compiler service's HIP initialisation results and idle polls so far, or null when it is not running. */
export function compilerState() {
  return loadBinding()?.compilerState() ?? null;
}

/** Stops the compiler service (exit then has nothing to close for it). */
export async function stopCompiler(): Promise<void> {
  const b = loadBinding();
  const err = b?.stopCompiler();
  if (err) throw backendError(err);
}

/** Why hiprtc of the loaded runtime would refuse a target, or undefined if it compiles for it. */
export function refuseArch(arch: string): string | undefined {
  if (typeof arch !== 'string') throw new TypeError(`devexit: arch must be a string; got ${describe(arch)}`);
  return binding().refuseArch(arch);
}

// ---- the backend ----

class HipBackend implements Backend {
  readonly name = NAME;

  async probe(): Promise<ProbeResult> {
    let p: NativeProbe;
    try {
      p = nativeProbe();
    } catch (err) {
      return { available: false, reason: `the addon failed: ${(err as Error).message}` };
    }
    const versions = versionsOf(p);
    const why = unavailableReason(p);
    if (why) return { available: false, reason: why, versions };
    const out: ProbeResult = { available: true, devices: p.count ?? 0, versions };
    if (p.versions?.standin) out.details = p.versions.standin;
    return out;
  }

  async deviceCount(): Promise<number> {
    const p = nativeProbe();
    const why = unavailableReason(p);
    if (why) throw unavailableError(NAME, why);
    return p.count ?? 0;
  }

  async open(index: number): Promise<Device> {
    checkIndex(index, 'index');
    const count = await this.deviceCount();
    if (index >= count) throw outOfRangeError('hip device index', index, `0..${count - 1}`);
    const known = devices.get(index);
    if (known && !known.closed) return known;
    if (isExiting()) throw exitingError(`open ${NAME}:${index}`);
    const info = binding().deviceInfo(index);
    if (info.error) throw backendError(info.error, info.hipError);
    const d = new HipDevice(index, info.name ?? `HIP device ${index}`, info.arch ?? '');
    devices.set(index, d);
    return d;
  }
}

/** The HIP backend. */
export const backend: Backend = new HipBackend();
