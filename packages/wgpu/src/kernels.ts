/** WGSL for the built-in kernels and the parsing of user kernels' bindings. */

export type ScalarType = 'u32' | 'i32' | 'f32';
export type Binding = { kind: 'buffer' } | { kind: 'scalar'; type: ScalarType };

export interface KernelSource {
  code: string;
  entry: string;
  bindings: Binding[];
  workgroup: [number, number, number];
  /** 'linear': one invocation per element, x spills into y past the dispatch limit.
   *  'single': one workgroup strides over everything (reductions). 'grid': as the user asked. */
  shape: 'linear' | 'single' | 'grid';
}

export const WG = 64;

// Invocation index for linear kernels: x may spill into y past maxComputeWorkgroupsPerDimension.
const INDEX = `let i = gid.x + gid.y * (nwg.x * ${WG}u);`;
const HEAD = '@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>';

const buf = { kind: 'buffer' } as const;
const u32 = { kind: 'scalar', type: 'u32' } as const;
const f32 = { kind: 'scalar', type: 'f32' } as const;

export const BUILTINS: Record<string, KernelSource> = {
  fill_u32: {
    entry: 'main',
    bindings: [buf, u32, u32],
    workgroup: [WG, 1, 1],
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
    entry: 'main',
    bindings: [buf, buf, u32],
    workgroup: [WG, 1, 1],
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
    entry: 'main',
    bindings: [buf, buf, f32, u32],
    workgroup: [WG, 1, 1],
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
    entry: 'main',
    bindings: [buf, buf, u32],
    workgroup: [WG, 1, 1],
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

/** Moves `len` bytes at any alignment: one invocation per destination word, no write races. */
export const BYTE_COPY: KernelSource = {
  entry: 'main',
  bindings: [buf, buf, u32, u32, u32, u32],
  workgroup: [WG, 1, 1],
  shape: 'linear',
  code: `
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
}`,
};

const BINDING =
  /@group\(\s*0\s*\)\s*@binding\(\s*(\d+)\s*\)\s*var\s*<\s*(storage|uniform)[^>]*>\s*[A-Za-z_][A-Za-z0-9_]*\s*:\s*([^;]+);/g;

/**
 * Reads a user kernel's interface from its WGSL: arguments are @group(0) @binding(i) in order;
 * buffers are `var<storage>`, scalars `var<uniform> name: u32|i32|f32`.
 */
export function parseUserKernel(code: string, entry: string): KernelSource {
  const found = new Map<number, Binding>();
  for (const m of code.matchAll(BINDING)) {
    const index = Number(m[1]);
    const type = (m[3] ?? '').trim();
    if (m[2] === 'storage') found.set(index, buf);
    else if (type === 'u32' || type === 'i32' || type === 'f32') found.set(index, { kind: 'scalar', type });
    else
      throw new TypeError(`devexit: source: uniform binding ${index} must be u32, i32 or f32; got ${type}`);
  }
  const bindings: Binding[] = [];
  for (let i = 0; i < found.size; i++) {
    const b = found.get(i);
    if (!b)
      throw new TypeError(
        `devexit: source: bindings must be @group(0) @binding(0..${found.size - 1}); ${i} is missing`,
      );
    bindings.push(b);
  }
  const fn = new RegExp(`@compute\\s*@workgroup_size\\(([^)]*)\\)\\s*fn\\s+${entry}\\s*\\(`).exec(code);
  if (!fn) throw new TypeError(`devexit: entry: no '@compute @workgroup_size(...) fn ${entry}(' in the WGSL`);
  const dims = (fn[1] ?? '').split(',').map((s) => Number(s.trim()));
  const workgroup: [number, number, number] = [dims[0] || 1, dims[1] || 1, dims[2] || 1];
  if (workgroup.some((d) => !Number.isInteger(d) || d < 1)) {
    throw new TypeError(`devexit: source: @workgroup_size of ${entry} must be literal integers`);
  }
  return { code, entry, bindings, workgroup, shape: 'grid' };
}
