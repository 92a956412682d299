import {
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
  isExiting,
  type Kernel,
  type KernelArg,
  outOfRangeError,
  type Queue,
} from '@devexit/core';
import type { GPUBindGroup, GPUBuffer, GPUComputePipeline, GPUDevice } from './gpuTypes.js';
import { BYTE_COPY, type KernelSource, workgroups } from './kernels.js';
import { type BoundArg, bindings, type LastBound, type Live, repeats, sameArgs } from './launchArgs.js';
import { WgpuBuffer, WgpuKernel } from './resources.js';

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
  /** The compute pass consecutive launches record into, and what it has bound. */
  #pass: GPUComputePassEncoder | undefined;
  #passPipeline: GPUComputePipeline | undefined;
  #passGroup: GPUBindGroup | undefined;
  /** Per kernel, the last launch's bindings: the same arguments again reuse its bind group. */
  readonly #lastBound = new Map<WgpuKernel, LastBound>();
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

  /** The encoder, for a command outside a compute pass: the open pass (if any) ends first. */
  #enc(): GPUCommandEncoder {
    this.#endPass();
    return this.#encoderOrNew();
  }

  #endPass(): void {
    if (!this.#pass) return;
    this.#pass.end();
    this.#pass = undefined;
    this.#passPipeline = undefined;
    this.#passGroup = undefined;
  }

  /** The open compute pass, or a new one: consecutive dispatches share a pass (WebGPU keeps
   * their order and their memory effects in order between dispatches of one pass). */
  #computePass(): GPUComputePassEncoder {
    this.#pass ??= this.#encoderOrNew().beginComputePass();
    return this.#pass;
  }

  #encoderOrNew(): GPUCommandEncoder {
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
      this.#endPass();
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
    this.#pass = undefined;
    this.#passPipeline = undefined;
    this.#passGroup = undefined;
    this.#lastBound.clear();
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
      const signal = checkSignal(checkOptions<AbortOptions>(options, ['signal'], 'read() options').signal);
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
    // The kernel's last launch again (same buffers, same scalar values, same grid): its checks
    // passed for exactly these arguments, and its bind group and workgroups still hold.
    const last = this.#lastBound.get(kernel);
    if (last !== undefined && last.groups !== undefined && grid === last.grid && repeats(last.args, args)) {
      if (this.#d.closed || isExiting()) this.#d.check(`launch ${kernel.name}`);
      this.#record(kernel, last.group, last.groups);
      return;
    }
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
    const bound = bindings(kernel, checked);
    this.#dispatch(kernel, groups, bound);
    const entry = this.#lastBound.get(kernel);
    if (entry?.args === bound && typeof grid === 'number') {
      entry.grid = grid;
      entry.groups = groups;
    }
  }

  #dispatch(k: WgpuKernel, groups: [number, number, number], args: BoundArg[]): void {
    this.#record(k, this.#bindGroup(k, args), groups);
  }

  #record(k: WgpuKernel, group: GPUBindGroup, [x, y, z]: [number, number, number]): void {
    const pass = this.#computePass();
    if (this.#passPipeline !== k.pipeline) {
      pass.setPipeline(k.pipeline);
      this.#passPipeline = k.pipeline;
    }
    if (this.#passGroup !== group) {
      pass.setBindGroup(0, group);
      this.#passGroup = group;
    }
    pass.dispatchWorkgroups(x, y, z);
  }

  /**
   * The bind group of a launch: the kernel's last one when the arguments are the same buffers
   * and scalar values (a loop of launches), else a new one (and a uniform buffer for its scalars,
   * immutable once made, so that a cached group stays right). Snapshots (a buffer bound writable
   * and read-only at once) are copies made per launch: never cached.
   */
  #bindGroup(k: WgpuKernel, args: BoundArg[]): GPUBindGroup {
    const last = this.#lastBound.get(k);
    if (last && sameArgs(last.args, args)) return last.group;
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
    let snapshot = false;
    const entries: GPUBindGroupEntry[] = args.map((a, binding) => {
      if (!('gpu' in a)) {
        return {
          binding,
          resource: { buffer: uniforms as GPUBuffer, offset: slot++ * UNIFORM_SLOT, size: 4 },
        };
      }
      if (!a.snapshot) return { binding, resource: { buffer: a.gpu } };
      snapshot = true;
      const copy = this.#temp(a.gpu.size);
      this.#enc().copyBufferToBuffer(a.gpu, 0, copy, 0, a.gpu.size);
      this.#garbage.push(copy);
      return { binding, resource: { buffer: copy } };
    });
    const group = this.#gpu.createBindGroup({ layout: k.layout, entries });
    // The group it replaces may still be used by recorded commands: its uniforms go when submitted.
    if (last?.uniforms) this.#garbage.push(last.uniforms);
    if (snapshot) {
      this.#lastBound.delete(k);
      if (uniforms) this.#garbage.push(uniforms);
    } else {
      this.#lastBound.set(k, { args, group, uniforms });
    }
    return group;
  }

  flush(options?: AbortOptions): Promise<void> {
    try {
      const signal = checkSignal(checkOptions<AbortOptions>(options, ['signal'], 'flush() options').signal);
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
