import {
  BUILTIN_KERNELS,
  type BuiltinKernelName,
  closeAtExit,
  currentConfig,
  DevexitError,
  type Device,
  type DeviceBuffer,
  type DeviceId,
  describeValue as describe,
  deviceClosedError,
  exitingError,
  forgetClose,
  type Grid,
  isExiting,
  type Kernel,
  type KernelArg,
  outOfRangeError,
  type Queue,
} from '@devexit/core';
import { BUILTINS, BYTE_COPY, type KernelSource, parseUserKernel, WG } from './kernels.js';
import { exitState } from './state.js';
import { drainPending } from './tracking.js';

const SERVICE = 'queue';
const UNIFORM_SLOT = 256;

class WgpuBuffer implements DeviceBuffer {
  readonly device: DeviceId;
  readonly size: number;
  gpu: GPUBuffer | undefined;
  constructor(device: DeviceId, size: number, gpu: GPUBuffer) {
    this.device = device;
    this.size = size;
    this.gpu = gpu;
  }
}

class WgpuKernel implements Kernel {
  readonly name: string;
  readonly source: KernelSource;
  readonly pipeline: GPUComputePipeline;
  readonly owner: WgpuDevice;
  constructor(name: string, source: KernelSource, pipeline: GPUComputePipeline, owner: WgpuDevice) {
    this.name = name;
    this.source = source;
    this.pipeline = pipeline;
    this.owner = owner;
  }
}

interface Deferred<T> {
  promise: Promise<T>;
  resolve(v: T): void;
  reject(e: unknown): void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const ceil4 = (n: number) => Math.ceil(n / 4) * 4;

function checkInt(v: unknown, name: string, min = 0): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) {
    throw new TypeError(`devexit: ${name} must be an integer >= ${min}; got ${describe(v)}`);
  }
  return v;
}

export interface DeviceInfo {
  adapterDescription: string;
  backend: string;
}

/** One GPUDevice and its queue; the device service of wgpu device `index` in this realm. */
export class WgpuDevice implements Device {
  readonly id: DeviceId;
  readonly backend = 'wgpu';
  readonly name: string;
  /** The Dawn device, for code that needs WebGPU directly. Destroyed on close. */
  readonly gpuDevice: GPUDevice;
  readonly info: DeviceInfo;
  private isClosed = false;
  private queueService: WgpuQueue | undefined;
  private readonly builtins = new Map<string, WgpuKernel>();
  private readonly waiting = new Set<Deferred<never>>();
  private closing: Promise<void> | undefined;
  private readonly onClosed: (d: WgpuDevice) => void;

  constructor(id: DeviceId, gpuDevice: GPUDevice, info: DeviceInfo, onClosed: (d: WgpuDevice) => void) {
    this.id = id;
    this.gpuDevice = gpuDevice;
    this.info = info;
    this.name = info.adapterDescription;
    this.onClosed = onClosed;
    closeAtExit(id, SERVICE, () => this.closeNow(false));
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /** Throws the typed error for a call after close or once exiting. */
  check(what: string): void {
    if (isExiting() || exitState.exiting) throw exitingError(what);
    if (this.isClosed) throw deviceClosedError(this.id, what);
  }

  queue(): Queue {
    this.check('start the queue');
    this.queueService ??= new WgpuQueue(this);
    return this.queueService;
  }

  kernel(name: BuiltinKernelName): Kernel {
    if (typeof name !== 'string' || !(BUILTIN_KERNELS as readonly string[]).includes(name)) {
      throw new TypeError(
        `devexit: name must be one of ${BUILTIN_KERNELS.join(', ')}; got ${describe(name)}`,
      );
    }
    this.check(`load kernel ${name}`);
    return this.builtin(name);
  }

  builtin(name: string): WgpuKernel {
    let k = this.builtins.get(name);
    if (!k) {
      const source = name === '__byte_copy' ? BYTE_COPY : BUILTINS[name];
      if (!source) throw new TypeError(`devexit: name: unknown kernel ${describe(name)}`);
      k = this.compile(name, source);
      this.builtins.set(name, k);
    }
    return k;
  }

  compile(name: string, source: KernelSource): WgpuKernel {
    const module = this.gpuDevice.createShaderModule({ code: source.code });
    const pipeline = this.gpuDevice.createComputePipeline({
      layout: 'auto',
      compute: { module, entryPoint: source.entry },
    });
    return new WgpuKernel(name, source, pipeline, this);
  }

  async loadKernel(source: string | Uint8Array, entry: string): Promise<Kernel> {
    if (typeof source !== 'string' && !(source instanceof Uint8Array)) {
      throw new TypeError(`devexit: source must be WGSL text; got ${describe(source)}`);
    }
    if (typeof entry !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(entry)) {
      throw new TypeError(`devexit: entry must be a WGSL function name; got ${describe(entry)}`);
    }
    this.check(`load kernel ${entry}`);
    const code = typeof source === 'string' ? source : new TextDecoder().decode(source);
    const parsed = parseUserKernel(code, entry);
    this.gpuDevice.pushErrorScope('validation');
    const module = this.gpuDevice.createShaderModule({ code });
    const pipeline = this.gpuDevice.createComputePipeline({
      layout: 'auto',
      compute: { module, entryPoint: entry },
    });
    const error = await this.track(this.gpuDevice.popErrorScope());
    if (error) {
      throw new DevexitError(
        'ERR_DEVEXIT_BACKEND',
        `devexit: wgpu: kernel ${entry} failed to compile: ${error.message}`,
      );
    }
    return new WgpuKernel(entry, parsed, pipeline, this);
  }

  /** Settles with `p`, or rejects with the typed error if the device closes first. */
  track<T>(p: Promise<T>): Promise<T> {
    const d = deferred<T>();
    const entry = d as unknown as Deferred<never>;
    this.waiting.add(entry);
    p.then(
      (v) => {
        this.waiting.delete(entry);
        d.resolve(v);
      },
      (e) => {
        this.waiting.delete(entry);
        d.reject(
          this.isClosed
            ? deviceClosedError(this.id, 'finish the work')
            : new DevexitError(
                'ERR_DEVEXIT_BACKEND',
                `devexit: wgpu: ${e instanceof Error ? e.message : String(e)}`,
                {
                  cause: e,
                },
              ),
        );
      },
    );
    return d.promise;
  }

  /**
   * The synchronous close (also the exit-time close): refuse work, reject what is pending with a
   * typed error, destroy the device (Dawn waits for the GPU to go idle). Idempotent.
   */
  closeNow(explicit: boolean): void {
    if (this.isClosed) return;
    this.isClosed = true;
    const exiting = exitState.exiting || (!explicit && isExiting());
    for (const w of this.waiting) {
      // The caller may have dropped it (a fire-and-forget flush): a close must not turn that into
      // an unhandled rejection. Handlers the caller attached still see the error.
      w.promise.catch(() => {});
      w.reject(exiting ? exitingError('finish the work') : deviceClosedError(this.id, 'finish the work'));
    }
    this.waiting.clear();
    try {
      this.gpuDevice.destroy();
    } finally {
      if (explicit) forgetClose(this.id, SERVICE);
      this.onClosed(this);
    }
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.closeNow(true);
      await drainPending(currentConfig().timeoutMs);
    })();
    return this.closing;
  }
}

/** The queue service of a WgpuDevice: commands are recorded into one encoder, submitted in order. */
export class WgpuQueue implements Queue {
  private readonly d: WgpuDevice;
  private readonly gpu: GPUDevice;
  private encoder: GPUCommandEncoder | undefined;
  private scheduled = false;
  private readonly garbage: GPUBuffer[] = [];

  constructor(device: WgpuDevice) {
    this.d = device;
    this.gpu = device.gpuDevice;
  }

  private buffer(b: unknown, name = 'buffer'): WgpuBuffer {
    if (
      !(b instanceof WgpuBuffer) ||
      b.device.type !== this.d.id.type ||
      b.device.index !== this.d.id.index
    ) {
      throw new TypeError(
        `devexit: ${name} must be a buffer from this wgpu device's queue; got ${describe(b)}`,
      );
    }
    if (!b.gpu) throw new TypeError(`devexit: ${name} was freed`);
    return b;
  }

  private range(b: WgpuBuffer, offset: number, bytes: number, what: string): void {
    if (offset + bytes > b.size) {
      throw outOfRangeError(
        `${what} of ${bytes} bytes at offset ${offset}`,
        offset + bytes,
        `buffer of ${b.size} bytes`,
      );
    }
  }

  private enc(): GPUCommandEncoder {
    if (!this.encoder) {
      this.encoder = this.gpu.createCommandEncoder();
      if (!this.scheduled) {
        this.scheduled = true;
        // Batches the commands of one synchronous run into a single submit.
        queueMicrotask(() => {
          this.scheduled = false;
          if (!this.d.closed) this.submit();
        });
      }
    }
    return this.encoder;
  }

  /** Submits what was recorded, so queue-level operations (writeBuffer, waits) keep the order. */
  submit(): void {
    if (this.encoder) {
      const cb = this.encoder.finish();
      this.encoder = undefined;
      this.gpu.queue.submit([cb]);
    }
    // Temporaries may be destroyed once submitted: Dawn frees them when the GPU is done.
    for (const b of this.garbage.splice(0)) b.destroy();
  }

  alloc(bytes: number): DeviceBuffer {
    checkInt(bytes, 'bytes');
    this.d.check('allocate');
    const max = this.gpu.limits.maxStorageBufferBindingSize;
    if (bytes > max) throw outOfRangeError('alloc bytes', bytes, `0..${max}`);
    const gpu = this.gpu.createBuffer({
      size: Math.max(4, ceil4(bytes)),
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
    });
    return new WgpuBuffer(this.d.id, bytes, gpu);
  }

  free(buffer: DeviceBuffer): void {
    const b = this.buffer(buffer);
    const gpu = b.gpu;
    b.gpu = undefined;
    if (this.d.closed) return;
    // After the commands already recorded that use it.
    if (gpu) this.garbage.push(gpu);
    if (!this.encoder) this.submit();
  }

  write(buffer: DeviceBuffer, data: ArrayBufferView, offset = 0): void {
    const b = this.buffer(buffer);
    if (!ArrayBuffer.isView(data)) {
      throw new TypeError(`devexit: data must be a TypedArray, DataView or Buffer; got ${describe(data)}`);
    }
    checkInt(offset, 'offset');
    this.range(b, offset, data.byteLength, 'write');
    this.d.check('write');
    if (data.byteLength === 0) return;
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    if (offset % 4 === 0 && bytes.byteLength % 4 === 0) {
      this.submit();
      this.gpu.queue.writeBuffer(b.gpu as GPUBuffer, offset, bytes);
      return;
    }
    // Unaligned: stage the bytes, then move them with the byte-copy kernel.
    const padded = new Uint8Array(ceil4(bytes.byteLength));
    padded.set(bytes);
    const tmp = this.temp(padded.byteLength);
    this.submit();
    this.gpu.queue.writeBuffer(tmp, 0, padded);
    this.byteCopy(tmp, 0, b.gpu as GPUBuffer, offset, bytes.byteLength);
    this.garbage.push(tmp);
  }

  private temp(bytes: number): GPUBuffer {
    const t = this.gpu.createBuffer({
      size: Math.max(4, ceil4(bytes)),
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
    });
    return t;
  }

  private byteCopy(src: GPUBuffer, srcOff: number, dst: GPUBuffer, dstOff: number, len: number): void {
    const first = Math.floor(dstOff / 4);
    const last = Math.floor((dstOff + len - 1) / 4);
    const words = last - first + 1;
    const k = this.d.builtin('__byte_copy');
    this.dispatch(k, words, [
      { gpu: src },
      { gpu: dst },
      { u32: srcOff },
      { u32: dstOff },
      { u32: len },
      { u32: words },
    ]);
  }

  read(buffer: DeviceBuffer, offset = 0, bytes?: number): Promise<Uint8Array> {
    try {
      const b = this.buffer(buffer);
      checkInt(offset, 'offset');
      const n = bytes === undefined ? Math.max(0, b.size - offset) : checkInt(bytes, 'bytes');
      this.range(b, offset, n, 'read');
      this.d.check('read');
      if (n === 0) return this.flush().then(() => new Uint8Array(0));
      const start = offset - (offset % 4);
      const len = ceil4(offset + n) - start;
      const staging = this.gpu.createBuffer({
        size: len,
        usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
      });
      this.enc().copyBufferToBuffer(b.gpu as GPUBuffer, start, staging, 0, len);
      this.submit();
      const mapped = staging.mapAsync(GPUMapMode.READ).then(() => {
        const out = new Uint8Array(staging.getMappedRange()).slice(offset - start, offset - start + n);
        staging.unmap();
        staging.destroy();
        return out;
      });
      return this.d.track(mapped);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  fill(buffer: DeviceBuffer, value: number, offset = 0, bytes?: number): void {
    const b = this.buffer(buffer);
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 0xffffffff) {
      throw new TypeError(`devexit: value must be a u32; got ${describe(value)}`);
    }
    checkInt(offset, 'offset');
    if (offset % 4) throw new TypeError(`devexit: offset must be a multiple of 4; got ${offset}`);
    const rest = Math.max(0, b.size - offset);
    const n = bytes === undefined ? rest - (rest % 4) : checkInt(bytes, 'bytes');
    if (n % 4) throw new TypeError(`devexit: bytes must be a multiple of 4; got ${n}`);
    this.range(b, offset, n, 'fill');
    this.d.check('fill');
    if (n === 0) return;
    this.submit();
    this.gpu.queue.writeBuffer(b.gpu as GPUBuffer, offset, new Uint32Array(n / 4).fill(value));
  }

  copy(src: DeviceBuffer, dst: DeviceBuffer, bytes?: number, srcOffset = 0, dstOffset = 0): void {
    const s = this.buffer(src, 'src');
    const t = this.buffer(dst, 'dst');
    checkInt(srcOffset, 'srcOffset');
    checkInt(dstOffset, 'dstOffset');
    const n = bytes === undefined ? Math.max(0, s.size - srcOffset) : checkInt(bytes, 'bytes');
    this.range(s, srcOffset, n, 'copy source');
    this.range(t, dstOffset, n, 'copy destination');
    this.d.check('copy');
    if (n === 0) return;
    let from = s.gpu as GPUBuffer;
    let fromOff = srcOffset;
    if (s === t) {
      // WebGPU refuses a copy within one buffer: go through a temporary.
      const start = srcOffset - (srcOffset % 4);
      const len = ceil4(srcOffset + n) - start;
      const tmp = this.temp(len);
      this.enc().copyBufferToBuffer(from, start, tmp, 0, len);
      this.garbage.push(tmp);
      from = tmp;
      fromOff = srcOffset - start;
    }
    if (fromOff % 4 === 0 && dstOffset % 4 === 0 && n % 4 === 0) {
      this.enc().copyBufferToBuffer(from, fromOff, t.gpu as GPUBuffer, dstOffset, n);
    } else {
      this.byteCopy(from, fromOff, t.gpu as GPUBuffer, dstOffset, n);
    }
  }

  launch(kernel: Kernel, grid: Grid, args: readonly KernelArg[]): void {
    if (!(kernel instanceof WgpuKernel) || kernel.owner !== this.d) {
      throw new TypeError(
        `devexit: kernel must come from this device's kernel() or loadKernel(); got ${describe(kernel)}`,
      );
    }
    const dims = checkGrid(grid);
    if (!Array.isArray(args)) throw new TypeError(`devexit: args must be an array; got ${describe(args)}`);
    const spec = kernel.source.bindings;
    if (args.length !== spec.length) {
      throw new TypeError(`devexit: args: ${kernel.name} takes ${spec.length} arguments; got ${args.length}`);
    }
    const bound: BoundArg[] = [];
    args.forEach((a, i) => {
      const want = spec[i] as (typeof spec)[number];
      if (want.kind === 'buffer') {
        if (!(a instanceof WgpuBuffer))
          throw new TypeError(`devexit: args[${i}] must be a buffer; got ${describe(a)}`);
        bound.push({ gpu: this.buffer(a, `args[${i}]`).gpu as GPUBuffer });
        return;
      }
      const rec = (a ?? {}) as Record<string, unknown>;
      const keys = typeof a === 'object' && a !== null ? Object.keys(rec) : [];
      const key = keys[0];
      const v = key === undefined ? undefined : rec[key];
      if (keys.length !== 1 || (key !== 'u32' && key !== 'i32' && key !== 'f32') || typeof v !== 'number') {
        throw new TypeError(`devexit: args[${i}] must be { ${want.type}: number }; got ${describe(a)}`);
      }
      if (key !== want.type)
        throw new TypeError(`devexit: args[${i}] must be { ${want.type}: number }; got { ${key} }`);
      bound.push({ [key]: v } as BoundArg);
    });
    this.d.check(`launch ${kernel.name}`);
    if (dims[0] * dims[1] * dims[2] === 0) return;
    this.dispatch(kernel, dims, bound);
  }

  private dispatch(k: WgpuKernel, grid: number | [number, number, number], args: BoundArg[]): void {
    const scalars = args.filter((a) => !('gpu' in a)).length;
    let uniforms: GPUBuffer | undefined;
    if (scalars > 0) {
      const data = new ArrayBuffer(scalars * UNIFORM_SLOT);
      const view = new DataView(data);
      let slot = 0;
      for (const a of args) {
        if ('u32' in a) view.setUint32(slot++ * UNIFORM_SLOT, a.u32 >>> 0, true);
        else if ('i32' in a) view.setInt32(slot++ * UNIFORM_SLOT, a.i32 | 0, true);
        else if ('f32' in a) view.setFloat32(slot++ * UNIFORM_SLOT, a.f32, true);
      }
      uniforms = this.gpu.createBuffer({
        size: data.byteLength,
        usage: GPUBufferUsage.UNIFORM,
        mappedAtCreation: true,
      });
      new Uint8Array(uniforms.getMappedRange()).set(new Uint8Array(data));
      uniforms.unmap();
    }
    let slot = 0;
    const entries: GPUBindGroupEntry[] = args.map((a, binding) =>
      'gpu' in a
        ? { binding, resource: { buffer: a.gpu } }
        : { binding, resource: { buffer: uniforms as GPUBuffer, offset: slot++ * UNIFORM_SLOT, size: 4 } },
    );
    const bindGroup = this.gpu.createBindGroup({ layout: k.pipeline.getBindGroupLayout(0), entries });
    const pass = this.enc().beginComputePass();
    pass.setPipeline(k.pipeline);
    pass.setBindGroup(0, bindGroup);
    const [x, y, z] = this.workgroups(k, grid);
    pass.dispatchWorkgroups(x, y, z);
    pass.end();
    if (uniforms) this.garbage.push(uniforms);
  }

  private workgroups(k: WgpuKernel, grid: number | [number, number, number]): [number, number, number] {
    const limit = this.gpu.limits.maxComputeWorkgroupsPerDimension;
    const src = k.source;
    if (src.shape === 'single') return [1, 1, 1];
    const dims: [number, number, number] = typeof grid === 'number' ? [grid, 1, 1] : grid;
    const [wx, wy, wz] = src.workgroup;
    let x = Math.ceil(dims[0] / wx);
    let y = Math.ceil(dims[1] / wy);
    const z = Math.ceil(dims[2] / wz);
    if (x > limit && y === 1 && z === 1) {
      // A long 1-D grid spills into y; linear kernels fold it back (gid.x + gid.y * nwg.x * 64).
      y = Math.ceil(x / limit);
      x = Math.ceil(x / y);
    }
    if (x > limit || y > limit || z > limit) {
      throw outOfRangeError('grid', dims.join('x'), `at most ${limit} workgroups per dimension`);
    }
    return [x, y, z];
  }

  flush(): Promise<void> {
    try {
      this.d.check('flush');
      this.submit();
      return this.d.track(this.gpu.queue.onSubmittedWorkDone());
    } catch (err) {
      return Promise.reject(err);
    }
  }
}

type BoundArg = { gpu: GPUBuffer } | { u32: number } | { i32: number } | { f32: number };

function checkGrid(grid: unknown): [number, number, number] {
  const bad = () => new TypeError(`devexit: grid must be a count >= 0 or [x, y?, z?]; got ${describe(grid)}`);
  if (typeof grid === 'number') {
    if (!Number.isSafeInteger(grid) || grid < 0) throw bad();
    return [grid, 1, 1];
  }
  if (!Array.isArray(grid) || grid.length < 1 || grid.length > 3) throw bad();
  const out: [number, number, number] = [1, 1, 1];
  grid.forEach((v, i) => {
    if (v === undefined) return;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw bad();
    out[i] = v;
  });
  return out;
}

export { WG };
