/** WGSL of the built-in kernels, and what a launch needs to know about any kernel's bindings. */

import { argError } from '@devexit/backend';
import {
  BUILTIN_KERNEL_SIGNATURES,
  type BuiltinKernelName,
  type KernelParam,
  outOfRangeError,
} from '@devexit/core';
import { minBindingSize, structSizes } from './wgslLayout.js';

/** How a binding is declared: a read-only or writable storage buffer, or a uniform scalar. */
export type Access = 'read' | 'read_write' | 'uniform';

export interface Binding {
  access: Access;
  /** The smallest buffer the shader accepts here, when the WGSL type says (a launch checks it). */
  minBytes: number | undefined;
}

export interface KernelSource {
  code: string;
  entry: string;
  /** The parameters a launch is checked against: core's table for built-ins, the WGSL for others. */
  params: readonly KernelParam[];
  /** params[i] is bound at @group(0) @binding(i). */
  bindings: readonly Binding[];
  workgroup: [number, number, number];
  /** 'linear': one invocation per element, x spills into y past the dispatch limit.
   *  'single': one workgroup strides over everything (reductions). 'grid': as the user asked. */
  shape: 'linear' | 'single' | 'grid';
}

export const WG = 64;

// Invocation index for linear kernels: x may spill into y past maxComputeWorkgroupsPerDimension.
const INDEX = `let i = gid.x + gid.y * (nwg.x * ${WG}u);`;
const HEAD = '@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>';

// Their parameters are core's BUILTIN_KERNEL_SIGNATURES; builtinSource() checks the WGSL agrees.
const BUILTIN_WGSL: Record<BuiltinKernelName, { code: string; shape: 'linear' | 'single' }> = {
  fill_u32: {
    shape: 'linear',
    code: `
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@group(0) @binding(1) var<uniform> value: u32;
@group(0) @binding(2) var<uniform> n: u32;
@compute @workgroup_size(${WG}) fn main(${HEAD}) {
  ${INDEX}
  if (i < n) { out[i] = value; }
}`,
  },
  copy: {
    shape: 'linear',
    code: `
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@group(0) @binding(2) var<uniform> n: u32;
@compute @workgroup_size(${WG}) fn main(${HEAD}) {
  ${INDEX}
  if (i < n) { dst[i] = src[i]; }
}`,
  },
  saxpy_f32: {
    shape: 'linear',
    code: `
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> a: f32;
@group(0) @binding(3) var<uniform> n: u32;
@compute @workgroup_size(${WG}) fn main(${HEAD}) {
  ${INDEX}
  if (i < n) { y[i] = a * x[i] + y[i]; }
}`,
  },
  // No float atomics in WGSL: one workgroup strides over x, then reduces in shared memory.
  sum_f32: {
    shape: 'single',
    code: `
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> n: u32;
var<workgroup> part: array<f32, ${WG}>;
@compute @workgroup_size(${WG}) fn main(@builtin(local_invocation_index) t: u32) {
  var acc = 0.0;
  for (var i = t; i < n; i += ${WG}u) { acc += x[i]; }
  part[t] = acc;
  workgroupBarrier();
  for (var s = ${WG / 2}u; s > 0u; s >>= 1u) {
    if (t < s) { part[t] += part[t + s]; }
    workgroupBarrier();
  }
  if (t == 0u) { out[0] = part[0]; }
}`,
  },
};

const builtins = new Map<BuiltinKernelName, KernelSource>();

/** A built-in (one object per name): its WGSL here, its parameters from core's BUILTIN_KERNEL_SIGNATURES. */
export function builtinSource(name: BuiltinKernelName): KernelSource {
  let source = builtins.get(name);
  if (!source) {
    const params = BUILTIN_KERNEL_SIGNATURES[name];
    const { code, shape } = BUILTIN_WGSL[name];
    const wgsl = parseUserKernel(code, 'main');
    const declared = (ps: readonly KernelParam[]) => ps.map((p) => `${p.name}: ${p.kind}`).join(', ');
    if (declared(wgsl.params) !== declared(params)) {
      throw new Error(
        `devexit: internal: the WGSL of ${name} declares (${declared(wgsl.params)}), core (${declared(params)})`,
      );
    }
    source = { ...wgsl, params, shape };
    builtins.set(name, source);
  }
  return source;
}

/** Moves `len` bytes at any alignment: one invocation per destination word, no write races. */
const BYTE_COPY_WGSL = `
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@group(0) @binding(2) var<uniform> srcOff: u32;
@group(0) @binding(3) var<uniform> dstOff: u32;
@group(0) @binding(4) var<uniform> len: u32;
@group(0) @binding(5) var<uniform> words: u32;
fn srcByte(p: u32) -> u32 { return (src[p / 4u] >> ((p % 4u) * 8u)) & 0xffu; }
@compute @workgroup_size(${WG}) fn main(${HEAD}) {
  ${INDEX}
  if (i >= words) { return; }
  let w = dstOff / 4u + i;
  var v = dst[w];
  for (var b = 0u; b < 4u; b++) {
    let p = w * 4u + b;
    if (p >= dstOff && p < dstOff + len) {
      let shift = b * 8u;
      v = (v & ~(0xffu << shift)) | (srcByte(srcOff + p - dstOff) << shift);
    }
  }
  dst[w] = v;
}`;

// `@group(0) @binding(i)` in either order, then `var<storage[, access]>` or `var<uniform>`.
const BINDING =
  /@(group|binding)\s*\(\s*(\d+)\s*\)\s*@(group|binding)\s*\(\s*(\d+)\s*\)\s*var\s*<\s*(storage|uniform)\s*(?:,\s*(read_write|read)\s*)?>\s*([A-Za-z_][A-Za-z0-9_]*)\s*:\s*([^;]+);/g;

function stripComments(code: string): string {
  return code.replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/\/\/[^\n]*/g, ' ');
}

/**
 * Reads a user kernel's parameters from its WGSL: arguments are @group(0) @binding(i) in order;
 * buffers are `var<storage, read|read_write>`, scalars `var<uniform> name: u32|i32|f32`.
 */
export function parseUserKernel(code: string, entry: string): KernelSource {
  const text = stripComments(code);
  const structs = structSizes(text);
  const found = new Map<number, { param: KernelParam; binding: Binding }>();
  for (const m of text.matchAll(BINDING)) {
    const attrs: Record<string, number> = { [m[1] ?? '']: Number(m[2]), [m[3] ?? '']: Number(m[4]) };
    if (attrs.group !== 0 || attrs.binding === undefined) continue;
    const index = attrs.binding;
    const name = m[7] ?? '';
    const type = (m[8] ?? '').trim();
    if (found.has(index)) {
      throw argError(
        'source',
        `WGSL with one variable per @group(0) @binding(${index})`,
        `${name}: ${type}`,
        false,
      );
    }
    if (m[5] === 'storage') {
      const access: Access = m[6] === 'read_write' ? 'read_write' : 'read';
      found.set(index, {
        param: { name, kind: 'buffer' },
        binding: { access, minBytes: minBindingSize(type, structs) },
      });
    } else if (type === 'u32' || type === 'i32' || type === 'f32') {
      found.set(index, { param: { name, kind: type }, binding: { access: 'uniform', minBytes: 4 } });
    } else {
      throw argError(
        'source',
        `WGSL whose uniform bindings are u32, i32 or f32 (binding ${index})`,
        type,
        false,
      );
    }
  }
  const params: KernelParam[] = [];
  const bindings: Binding[] = [];
  for (let i = 0; i < found.size; i++) {
    const b = found.get(i);
    if (!b) {
      const have = [...found.keys()].sort((a, b) => a - b).join(', ');
      throw argError(
        'source',
        'WGSL whose @group(0) bindings are numbered 0, 1, 2, ... without a gap',
        `bindings ${have}`,
        false,
      );
    }
    params.push(b.param);
    bindings.push(b.binding);
  }
  const fn = new RegExp(`@compute\\s*@workgroup_size\\(([^)]*)\\)\\s*fn\\s+${entry}\\s*\\(`).exec(text);
  if (!fn)
    throw argError(
      'entry',
      `a function of the WGSL ('@compute @workgroup_size(...) fn ${entry}(')`,
      entry,
      false,
    );
  const dims = (fn[1] ?? '').split(',').map((s) => Number(s.trim()));
  const workgroup: [number, number, number] = [dims[0] || 1, dims[1] || 1, dims[2] || 1];
  if (workgroup.some((d) => !Number.isInteger(d) || d < 1)) {
    throw argError('source', `WGSL whose @workgroup_size of ${entry} is literal integers`, fn[1], false);
  }
  return { code, entry, params, bindings, workgroup, shape: 'grid' };
}

/** The internal unaligned byte copy (write and copy at offsets WebGPU's copies refuse). */
export const BYTE_COPY: KernelSource = { ...parseUserKernel(BYTE_COPY_WGSL, 'main'), shape: 'linear' };

/**
 * The workgroups a launch dispatches, checked against the per-dimension limit: computed before
 * anything is recorded, so a grid Dawn would refuse is refused here and the batch stays valid.
 */
export function workgroups(
  src: KernelSource,
  grid: readonly [number, number, number],
  limit: number,
): [number, number, number] {
  if (src.shape === 'single') return [1, 1, 1];
  const [wx, wy, wz] = src.workgroup;
  let x = Math.ceil(grid[0] / wx);
  let y = Math.ceil(grid[1] / wy);
  const z = Math.ceil(grid[2] / wz);
  if (x > limit && y === 1 && z === 1) {
    // A long 1-D grid spills into y; linear kernels fold it back (gid.x + gid.y * nwg.x * 64).
    y = Math.ceil(x / limit);
    x = Math.ceil(x / y);
  }
  if (x > limit || y > limit || z > limit) {
    throw outOfRangeError('grid', grid.join('x'), `at most ${limit} workgroups per dimension`);
  }
  return [x, y, z];
}
