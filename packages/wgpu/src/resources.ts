import type { DeviceBuffer, DeviceId, Kernel } from '@devexit/core';
import type { GPUBindGroupLayout, GPUBuffer, GPUComputePipeline } from './gpuTypes.js';
import type { KernelSource } from './kernels.js';
import type { QueueOwner } from './queue.js';

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
