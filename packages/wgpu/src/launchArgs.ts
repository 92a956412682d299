import { argError, type CheckedArg, type Scalar } from '@devexit/backend';
import { type KernelArg, outOfRangeError } from '@devexit/core';
import type { GPUBindGroup, GPUBuffer } from './gpuTypes.js';
import { WgpuBuffer, type WgpuKernel } from './resources.js';

// What a launch binds: its checked arguments as GPU buffers and scalars, compared with the last
// launch's so that a loop of launches reuses one bind group (queue.ts).

export type Live = WgpuBuffer & { gpu: GPUBuffer };
export type BoundArg = { gpu: GPUBuffer; snapshot?: boolean } | Scalar;
/** A kernel's last bind group; with the grid count that last launched it and its workgroups. */
export type LastBound = {
  args: BoundArg[];
  group: GPUBindGroup;
  uniforms?: GPUBuffer | undefined;
  grid?: number;
  groups?: [number, number, number];
};

/**
 * A launch's arguments are exactly those that were bound last (and checked then): the same live
 * buffers of this device, and scalars with one own key, of the same kind, with the same value.
 */
export function repeats(bound: BoundArg[], args: readonly KernelArg[]): boolean {
  if (!Array.isArray(args) || args.length !== bound.length) return false;
  for (let i = 0; i < bound.length; i++) {
    const b = bound[i] as BoundArg;
    const a: unknown = args[i];
    if ('gpu' in b) {
      if (b.snapshot || !(a instanceof WgpuBuffer) || a.gpu !== b.gpu) return false;
      continue;
    }
    if (typeof a !== 'object' || a === null || Array.isArray(a) || a instanceof WgpuBuffer) return false;
    let keys = 0;
    for (const k in a) {
      if (k !== b.kind || ++keys > 1) return false;
    }
    if (
      keys !== 1 ||
      !Object.hasOwn(a, b.kind) ||
      !Object.is((a as Record<string, unknown>)[b.kind], b.value)
    )
      return false;
  }
  return true;
}

/** The same buffers and the same scalar values, in the same order. */
export function sameArgs(a: BoundArg[], b: BoundArg[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as BoundArg;
    const y = b[i] as BoundArg;
    if ('gpu' in x) {
      if (!('gpu' in y) || x.gpu !== y.gpu || x.snapshot || y.snapshot) return false;
    } else if ('gpu' in y || x.kind !== y.kind || !Object.is(x.value, y.value)) {
      return false;
    }
  }
  return true;
}

/**
 * The bind group entries of a checked launch, with what Dawn would refuse at dispatch handled
 * here, before anything is recorded: a buffer smaller than its binding's WGSL type is refused; a
 * buffer bound writable twice is refused; a buffer bound writable and also read-only is read
 * through a snapshot taken just before the dispatch (inputs are read before outputs are written,
 * as copy(b, b, n) and saxpy with x = y expect).
 */
export function bindings(kernel: WgpuKernel, args: CheckedArg<Live>[]): BoundArg[] {
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
