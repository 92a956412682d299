import { BUILTIN_KERNEL_SIGNATURES, BUILTIN_KERNELS } from '@devexit/core';
import { describe, expect, it } from 'vitest';
import { builtinSource, parseUserKernel } from '../src/kernels.js';
import { minBindingSize, structSizes } from '../src/wgslLayout.js';

// What a launch is checked against, read from WGSL: no adapter needed.
const head = '@compute @workgroup_size(8, 2) fn k() {}';

describe('WGSL kernel parameters', () => {
  it("built-ins: core's BUILTIN_KERNEL_SIGNATURES, and their WGSL declares the same names and kinds", () => {
    for (const name of BUILTIN_KERNELS) {
      const source = builtinSource(name);
      expect(source.params).toBe(BUILTIN_KERNEL_SIGNATURES[name]);
      const declared = parseUserKernel(source.code, 'main').params;
      expect(declared.map((p) => [p.name, p.kind])).toEqual(source.params.map((p) => [p.name, p.kind]));
    }
  });

  it('reads parameters in binding order: storage buffers (read or read_write), uniform scalars, either attribute order, comments skipped', () => {
    const k = parseUserKernel(
      `// @group(0) @binding(3) var<storage> commented: array<u32>;
/* @group(0) @binding(4) var<uniform> also: u32; */
@binding(2) @group(0) var<uniform> scale: f32;
@group(0) @binding(0) var<storage> src: array<f32>;
@group(0)@binding(1) var<storage, read_write> dst: array<f32>;
@group(0) @binding(3) var<uniform> count: i32;
@group(1) @binding(0) var<storage> other: array<f32>;
${head}`,
      'k',
    );
    expect(k.params).toEqual([
      { name: 'src', kind: 'buffer' },
      { name: 'dst', kind: 'buffer' },
      { name: 'scale', kind: 'f32' },
      { name: 'count', kind: 'i32' },
    ]);
    expect(k.bindings.map((b) => b.access)).toEqual(['read', 'read_write', 'uniform', 'uniform']);
    expect(k.workgroup).toEqual([8, 2, 1]);
  });

  it('refuses what a launch could not bind: a gap, two variables at one binding, a uniform that is not a scalar, a missing entry', () => {
    const code = (decls: string) => `${decls}\n${head}`;
    const bad = [
      code('@group(0) @binding(1) var<storage> a: array<u32>;'),
      code(
        '@group(0) @binding(0) var<storage> a: array<u32>;\n@group(0) @binding(0) var<storage> b: array<u32>;',
      ),
      code('@group(0) @binding(0) var<uniform> v: vec4<f32>;'),
    ];
    for (const c of bad) {
      expect(() => parseUserKernel(c, 'k'), c).toThrow(
        expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }),
      );
    }
    expect(() => parseUserKernel(code(''), 'nope')).toThrow(/entry must be a function of the WGSL/);
  });
});

describe('WGSL minimum binding sizes', () => {
  const size = (type: string, code = '') => minBindingSize(type, structSizes(code));

  it('scalars, vectors, matrices, atomics and arrays (a runtime-sized array needs one element)', () => {
    expect(size('array<u32>')).toBe(4);
    expect(size('array<f16>')).toBe(2);
    expect(size('array<vec2<f32>>')).toBe(8);
    expect(size('array<vec3f>')).toBe(16);
    expect(size('array<vec4<i32>>')).toBe(16);
    expect(size('array<atomic<u32>>')).toBe(4);
    expect(size('array<f32, 10>')).toBe(40);
    expect(size('array<vec3<f32>, 4u>')).toBe(64);
    expect(size('mat4x4f')).toBe(64);
    expect(size('mat3x3<f32>')).toBe(48);
    expect(size('mat2x3h')).toBe(16);
    expect(size('u32')).toBe(4);
  });

  it('structs (alignment and padding, @size / @align), aliases, and undefined for what it cannot size', () => {
    const code = `struct P { pos: vec3<f32>, id: u32, }
struct Q { a: u32, b: vec3<f32> }
struct R { @align(32) a: u32, @size(12) b: f32 }
struct Cells { count: u32, data: array<vec4<f32>> }
alias Points = array<P>;`;
    expect(size('P', code)).toBe(16);
    expect(size('Q', code)).toBe(32);
    expect(size('R', code)).toBe(32);
    expect(size('Cells', code)).toBe(32);
    expect(size('Points', code)).toBe(16);
    expect(size('array<f32, N>')).toBeUndefined();
    expect(size('Unknown')).toBeUndefined();
    expect(size('array<bool>')).toBeUndefined();
  });
});
