import {
  argError,
  type CheckedArg,
  checkCopy,
  checkFill,
  checkGrid,
  checkLaunchArgs,
  checkOptions,
  checkRead,
  checkSize,
  checkWrite,
  foreignBufferError,
  foreignKernelError,
  freedBufferError,
  type Scalar,
} from '@devexit/backend';
import {
  type AbortOptions,
  abortError,
  checkSignal,
  type DeviceBuffer,
  type DeviceId,
  type Grid,
  type Kernel,
  type KernelArg,
  outOfRangeError,
  type Queue,
} from '@devexit/core';
import { BYTE_COPY, type KernelSource, workgroups } from './kernels.js';

const UNIFORM_SLOT = 256;
const ceil4 = (n: number) => Math.ceil(n / 4) * 4;

/** What a queue needs from its device (device.ts). */
export interface QueueOwner {
  readonly id: DeviceId;
  readonly gpuDevice: GPUDevice;
  readonly closed: boolean;
  /** Throws the typed error if the device is closed or the process is exiting. */
  check(what: string): void;
  /** Settles with `p`, or as the device's close decides, or with an AbortError. */
  track<T>(p: Promise<T>, what: string, signal?: AbortSignal): Promise<T>;
  /** The device's close (a queue's asyncDispose). */
  close(): Promise<void>;
  /** The compiled pipeline of an internal kernel. */
  internal(source: KernelSource): WgpuKernel;
}

export class WgpuBuffer implements DeviceBuffer {
  readonly device: DeviceId;
  readonly size: number;
  /** @internal The device object that allocated it. */
  readonly owner: object;
  /** @internal Undefined once freed. */
  gpu: GPUBuffer | undefined;
  constructor(owner: QueueOwner, size: number, gpu: GPUBuffer) {
    this.device = owner.id;
    this.size = size;
    this.owner = owner;
    this.gpu = gpu;
  }
}

export class WgpuKernel implements Kernel {
  readonly name: string;
  /** @internal */
  readonly source: KernelSource;
  /** @internal */
  readonly pipeline: GPUComputePipeline;
  /** @internal */
  readonly layout: GPUBindGroupLayout;
  /** @internal */
  readonly owner: object;
  constructor(
    name: string,
    source: KernelSource,
    pipeline: GPUComputePipeline,
    layout: GPUBindGroupLayout,
    owner: object,
  ) {
    this.name = name;
    this.source = source;
    this.pipeline = pipeline;
    this.layout = layout;
    this.owner = owner;
  }
}

type Live = WgpuBuffer & { gpu: GPUBuffer };
type BoundArg = { gpu: GPUBuffer; snapshot?: boolean } | Scalar;

/**
 * The queue of a WgpuDevice: launches and copies are recorded into one command encoder and
 * submitted at the end of the synchronous run (or before any queue-level operation), so the
 * order is the enqueue order. Every call is validated whole before it touches Dawn: Dawn
 * invalidates an encoder, and every command recorded in it, on the first bad command.
 */
export class WgpuQueue implements Queue {
  readonly #d: QueueOwner;
  readonly #gpu: GPUDevice;
  readonly #name: string;
  #encoder: GPUCommandEncoder | undefined;
  #scheduled = false;
  readonly #garbage: GPUBuffer[] = [];

  constructor(device: QueueOwner) {
    this.#d = device;
    this.#gpu = device.gpuDevice;
    this.#name = `wgpu:${device.id.index}`;
  }

  #buffer(v: unknown, argument: string, what: string): Live {
    if (!(v instanceof WgpuBuffer) || v.owner !== this.#d) throw foreignBufferError(argument, this.#name, v);
    if (!v.gpu) throw freedBufferError(what, argument);
    return v as Live;
  }

  #enc(): GPUCommandEncoder {
    if (!this.#encoder) {
      this.#encoder = this.#gpu.createCommandEncoder();
      if (!this.#scheduled) {
        this.#scheduled = true;
        // Batches the commands of one synchronous run into a single submit.
        queueMicrotask(() => {
          this.#scheduled = false;
          if (!this.#d.closed) this.submit();
        });
      }
    }
    return this.#encoder;
  }

  /** Submits what was recorded, so queue-level operations (writeBuffer, waits) keep the order. */
  submit(): void {
    if (this.#encoder) {
      const cb = this.#encoder.finish();
      this.#encoder = undefined;
      this.#gpu.queue.submit([cb]);
    }
    // Temporaries may be destroyed once submitted: Dawn frees them when the GPU is done.
    for (const b of this.#garbage.splice(0)) b.destroy();
  }

  /** Drops what was recorded and not submitted (a dropping close); destroy() frees the rest. */
  discard(): void {
    this.#encoder = undefined;
    this.#garbage.length = 0;
  }

  alloc(bytes: number): DeviceBuffer {
    checkSize(bytes, 'bytes');
    this.#d.check('alloc');
    const max = this.#gpu.limits.maxStorageBufferBindingSize;
    if (bytes > max) throw outOfRangeError('alloc bytes', bytes, `0..${max}`);
    return new WgpuBuffer(this.#d, bytes, this.#temp(bytes));
  }

  free(buffer: DeviceBuffer): void {
    const b = this.#buffer(buffer, 'buffer', 'free');
    this.#d.check('free');
    const gpu = b.gpu;
    (b as WgpuBuffer).gpu = undefined;
    // After the commands already recorded that use it.
    this.#garbage.push(gpu);
    if (!this.#encoder) this.submit();
  }

  write(buffer: DeviceBuffer, data: ArrayBufferView, offset = 0): void {
    const b = this.#buffer(buffer, 'buffer', 'write');
    const { bytes } = checkWrite(b.size, data, offset);
    this.#d.check('write');
    if (bytes.byteLength === 0) return;
    if (offset % 4 === 0 && bytes.byteLength % 4 === 0) {
      this.submit();
      this.#gpu.queue.writeBuffer(b.gpu, offset, bytes);
      return;
    }
    // Unaligned: stage the bytes, then move them with the byte-copy kernel.
    const padded = new Uint8Array(ceil4(bytes.byteLength));
    padded.set(bytes);
    const tmp = this.#temp(padded.byteLength);
    this.submit();
    this.#gpu.queue.writeBuffer(tmp, 0, padded);
    this.#byteCopy(tmp, 0, b.gpu, offset, bytes.byteLength);
    this.#garbage.push(tmp);
  }

  #temp(bytes: number): GPUBuffer {
    return this.#gpu.createBuffer({
      size: Math.max(4, ceil4(bytes)),
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
    });
  }

  #byteCopy(src: GPUBuffer, srcOff: number, dst: GPUBuffer, dstOff: number, len: number): void {
    const first = Math.floor(dstOff / 4);
    const last = Math.floor((dstOff + len - 1) / 4);
    const words = last - first + 1;
    const k = this.#d.internal(BYTE_COPY);
    const groups = workgroups(BYTE_COPY, [words, 1, 1], this.#gpu.limits.maxComputeWorkgroupsPerDimension);
    const u32 = (value: number): Scalar => ({ kind: 'u32', value });
    this.#dispatch(k, groups, [{ gpu: src }, { gpu: dst }, u32(srcOff), u32(dstOff), u32(len), u32(words)]);
  }

  read(buffer: DeviceBuffer, offset = 0, bytes?: number, options?: AbortOptions): Promise<Uint8Array> {
    try {
      const b = this.#buffer(buffer, 'buffer', 'read');
      const { bytes: n } = checkRead(b.size, offset, bytes);
      const signal = checkSignal(checkOptions<AbortOptions>(options).signal);
      this.#d.check('read');
      if (signal?.aborted) return Promise.reject(abortError(signal, 'read'));
      if (n === 0) return this.flush(options).then(() => new Uint8Array(0));
      const start = offset - (offset % 4);
      const len = ceil4(offset + n) - start;
      const staging = this.#gpu.createBuffer({
        size: len,
        usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
      });
      this.#enc().copyBufferToBuffer(b.gpu, start, staging, 0, len);
      this.submit();
      const mapped = staging.mapAsync(GPUMapMode.READ).then(() => {
        const out = new Uint8Array(staging.getMappedRange()).slice(offset - start, offset - start + n);
        staging.unmap();
        staging.destroy();
        return out;
      });
      return this.#d.track(mapped, 'read', signal);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  fill(buffer: DeviceBuffer, value: number, offset = 0, bytes?: number): void {
    const b = this.#buffer(buffer, 'buffer', 'fill');
    const { bytes: n } = checkFill(b.size, value, offset, bytes);
    this.#d.check('fill');
    if (n === 0) return;
    this.submit();
    this.#gpu.queue.writeBuffer(b.gpu, offset, new Uint32Array(n / 4).fill(value));
  }

  copy(src: DeviceBuffer, dst: DeviceBuffer, bytes?: number, srcOffset = 0, dstOffset = 0): void {
    const s = this.#buffer(src, 'src', 'copy');
    const t = this.#buffer(dst, 'dst', 'copy');
    const { bytes: n } = checkCopy(s.size, t.size, bytes, srcOffset, dstOffset);
    this.#d.check('copy');
    if (n === 0) return;
    let from = s.gpu;
    let fromOff = srcOffset;
    if (s === t) {
      // WebGPU refuses a copy within one buffer: go through a temporary.
      const start = srcOffset - (srcOffset % 4);
      const len = ceil4(srcOffset + n) - start;
      const tmp = this.#temp(len);
      this.#enc().copyBufferToBuffer(from, start, tmp, 0, len);
      this.#garbage.push(tmp);
      from = tmp;
      fromOff = srcOffset - start;
    }
    if (fromOff % 4 === 0 && dstOffset % 4 === 0 && n % 4 === 0) {
      this.#enc().copyBufferToBuffer(from, fromOff, t.gpu, dstOffset, n);
    } else {
      this.#byteCopy(from, fromOff, t.gpu, dstOffset, n);
    }
  }

  launch(kernel: Kernel, grid: Grid, args: readonly KernelArg[]): void {
    if (!(kernel instanceof WgpuKernel) || kernel.owner !== this.#d)
      throw foreignKernelError(this.#name, kernel);
    const dims = checkGrid(grid);
    const checked = checkLaunchArgs<Live>(args, {
      kernelName: kernel.name,
      signature: kernel.source.params,
      buffer: (v, argument) =>
        v instanceof WgpuBuffer ? { buffer: this.#buffer(v, argument, 'launch'), size: v.size } : undefined,
    });
    this.#d.check(`launch ${kernel.name}`);
    if (dims[0] === 0 || dims[1] === 0 || dims[2] === 0) return;
    const groups = workgroups(kernel.source, dims, this.#gpu.limits.maxComputeWorkgroupsPerDimension);
    this.#dispatch(kernel, groups, bindings(kernel, checked));
  }

  #dispatch(k: WgpuKernel, [x, y, z]: [number, number, number], args: BoundArg[]): void {
    const scalars = args.filter((a): a is Scalar => !('gpu' in a));
    let uniforms: GPUBuffer | undefined;
    if (scalars.length > 0) {
      const data = new ArrayBuffer(scalars.length * UNIFORM_SLOT);
      const view = new DataView(data);
      scalars.forEach((a, slot) => {
        if (a.kind === 'u32') view.setUint32(slot * UNIFORM_SLOT, a.value, true);
        else if (a.kind === 'i32') view.setInt32(slot * UNIFORM_SLOT, a.value, true);
        else view.setFloat32(slot * UNIFORM_SLOT, a.value, true);
      });
      uniforms = this.#gpu.createBuffer({
        size: data.byteLength,
        usage: GPUBufferUsage.UNIFORM,
        mappedAtCreation: true,
      });
      new Uint8Array(uniforms.getMappedRange()).set(new Uint8Array(data));
      uniforms.unmap();
    }
    let slot = 0;
    const entries: GPUBindGroupEntry[] = args.map((a, binding) => {
      if (!('gpu' in a)) {
        return {
          binding,
          resource: { buffer: uniforms as GPUBuffer, offset: slot++ * UNIFORM_SLOT, size: 4 },
        };
      }
      if (!a.snapshot) return { binding, resource: { buffer: a.gpu } };
      const copy = this.#temp(a.gpu.size);
      this.#enc().copyBufferToBuffer(a.gpu, 0, copy, 0, a.gpu.size);
      this.#garbage.push(copy);
      return { binding, resource: { buffer: copy } };
    });
    const bindGroup = this.#gpu.createBindGroup({ layout: k.layout, entries });
    const pass = this.#enc().beginComputePass();
    pass.setPipeline(k.pipeline);
    pass.setBindGroup(0, bindGroup);
    pass.dispatchWorkgroups(x, y, z);
    pass.end();
    if (uniforms) this.#garbage.push(uniforms);
  }

  flush(options?: AbortOptions): Promise<void> {
    try {
      const signal = checkSignal(checkOptions<AbortOptions>(options).signal);
      this.#d.check('flush');
      if (signal?.aborted) return Promise.reject(abortError(signal, 'flush'));
      this.submit();
      return this.#d.track(this.#gpu.queue.onSubmittedWorkDone(), 'flush', signal);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Closes the device (its queue is its one service): `await using q = device.queue()`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.#d.close();
  }
}

/**
 * The bind group entries of a checked launch, with what Dawn would refuse at dispatch handled
 * here, before anything is recorded: a buffer smaller than its binding's WGSL type is refused; a
 * buffer bound writable twice is refused; a buffer bound writable and also read-only is read
 * through a snapshot taken just before the dispatch (inputs are read before outputs are written,
 * as copy(b, b, n) and saxpy with x = y expect).
 */
function bindings(kernel: WgpuKernel, args: CheckedArg<Live>[]): BoundArg[] {
  const { params, bindings: slots } = kernel.source;
  const name = (i: number) => `args[${i}] (${params[i]?.name ?? '?'})`;
  const writer = new Map<GPUBuffer, number>();
  args.forEach((a, i) => {
    if (a.kind !== 'buffer') return;
    const slot = slots[i];
    if (slot?.minBytes !== undefined && a.buffer.gpu.size < slot.minBytes) {
      throw outOfRangeError(
        `${kernel.name} ${name(i)}`,
        `${a.size} bytes`,
        `its WGSL type needs at least ${slot.minBytes} bytes`,
      );
    }
    if (slot?.access !== 'read_write') return;
    const first = writer.get(a.buffer.gpu);
    if (first !== undefined) {
      throw argError(
        `${name(i)} of ${kernel.name}`,
        `another buffer than args[${first}]: WebGPU does not bind one buffer writable twice in one dispatch`,
        a.buffer,
        false,
      );
    }
    writer.set(a.buffer.gpu, i);
  });
  return args.map((a, i) => {
    if (a.kind !== 'buffer') return a;
    const gpu = a.buffer.gpu;
    return slots[i]?.access === 'read' && writer.has(gpu) ? { gpu, snapshot: true } : { gpu };
  });
}
