import { createRequire } from 'node:module';
import type { Kernel, Queue } from '@devexit/core';
import { backend, type WgpuDevice } from '@devexit/wgpu';
import { afterEach, describe, expect, it } from 'vitest';
import { unavailable } from './probe.js';

// wgpu's own launch rules on real Dawn: a refused launch is refused before anything reaches Dawn,
// so the batch it would have joined stays valid. Every test also asserts that Dawn reported no
// validation error: an invalid batch is lost without one (reads resolve with zeros).
const u32 = (b: Uint8Array) => Array.from(new Uint32Array(b.slice().buffer));
const f32 = (b: Uint8Array) => Array.from(new Float32Array(b.slice().buffer));

let dawnErrors: string[] = [];

async function open(): Promise<WgpuDevice> {
  const d = (await backend.open(0)) as WgpuDevice;
  d.gpuDevice.onuncapturederror = (e) => {
    dawnErrors.push((e as GPUUncapturedErrorEvent).error.message.split('\n')[0] ?? '');
  };
  return d;
}

function refusal(fn: () => unknown): { name: string; code: unknown; message: string } | undefined {
  try {
    fn();
  } catch (err) {
    const e = err as Error & { code?: unknown };
    return { name: e.name, code: e.code, message: e.message };
  }
  return undefined;
}

const USER_I32 = `@group(0) @binding(0) var<storage, read_write> o: array<i32>;
@group(0) @binding(1) var<uniform> k: i32;
@compute @workgroup_size(16) fn times(@builtin(global_invocation_id) g: vec3<u32>) {
  if (g.x < arrayLength(&o)) { o[g.x] = i32(g.x) * k; }
}`;

describe.skipIf(unavailable)('wgpu: a refused launch leaves the batch intact (real Dawn)', () => {
  afterEach(async () => {
    // Dawn delivers its error callbacks while the event loop turns.
    await new Promise((r) => setTimeout(r, 20));
    expect(dawnErrors, 'Dawn validation errors').toEqual([]);
    dawnErrors = [];
  });

  it('a grid past the per-dimension workgroup limit, right after a valid launch: OUT_OF_RANGE, the valid launch runs', async () => {
    const d = await open();
    const q = d.queue();
    const fill = d.kernel('fill_u32');
    const limit = d.gpuDevice.limits.maxComputeWorkgroupsPerDimension;
    const b = q.alloc(16);
    q.launch(fill, 4, [b, { u32: 7 }, { u32: 4 }]);
    const err = refusal(() => q.launch(fill, [64 * (limit + 1), 2], [b, { u32: 8 }, { u32: 4 }]));
    expect(err).toMatchObject({ name: 'DevexitError', code: 'ERR_DEVEXIT_OUT_OF_RANGE' });
    expect(err?.message).toContain('workgroups per dimension');
    expect(u32(await q.read(b))).toEqual([7, 7, 7, 7]);
    q.free(b);
  });

  it('scalars are checked: u32 -1, 1.5, 2^32, "1"; i32 2^31, -2^31-1, 1.5; f32 "1" are refused, nothing is written', async () => {
    const d = await open();
    const q = d.queue();
    const fill = d.kernel('fill_u32');
    const times = await d.loadKernel(USER_I32, 'times');
    const b = q.alloc(16);
    const c = q.alloc(16);
    q.launch(fill, 4, [b, { u32: 7 }, { u32: 4 }]);
    q.launch(times, 4, [c, { i32: 5 }]);
    const bad = (v: unknown) => v as never;
    // A number outside its range: RangeError ERR_OUT_OF_RANGE naming the scalar (issue 18: one
    // code per mistake, and the message says what is wrong, not "got an object").
    for (const value of [{ u32: -1 }, { u32: 1.5 }, { u32: 2 ** 32 }]) {
      const err = refusal(() => q.launch(fill, 4, [b, value, { u32: 4 }]));
      expect(err, JSON.stringify(value)).toMatchObject({ name: 'RangeError', code: 'ERR_OUT_OF_RANGE' });
      expect(err?.message).toContain('args[1].u32 must be an integer in 0..4294967295');
    }
    expect(refusal(() => q.launch(fill, 4, [b, { u32: bad('1') }, { u32: 4 }]))).toMatchObject({
      name: 'TypeError',
      code: 'ERR_INVALID_ARG_TYPE',
    });
    for (const k of [{ i32: 2 ** 31 }, { i32: -(2 ** 31) - 1 }, { i32: 1.5 }]) {
      expect(
        refusal(() => q.launch(times, 4, [c, k])),
        JSON.stringify(k),
      ).toMatchObject({
        name: 'RangeError',
        code: 'ERR_OUT_OF_RANGE',
      });
    }
    const x = q.alloc(16);
    expect(
      refusal(() => q.launch(d.kernel('saxpy_f32'), 4, [x, x, { f32: bad('1') }, { u32: 4 }])),
    ).toMatchObject({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' });
    expect(u32(await q.read(b))).toEqual([7, 7, 7, 7]);
    expect(Array.from(new Int32Array((await q.read(c)).slice().buffer))).toEqual([0, 5, 10, 15]);
    // The extremes of each range are accepted.
    q.launch(fill, 4, [b, { u32: 0xffffffff }, { u32: 4 }]);
    q.launch(times, 4, [c, { i32: -(2 ** 31) }]);
    expect(u32(await q.read(b))).toEqual([0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff]);
    expect(Array.from(new Int32Array((await q.read(c, 0, 4)).slice().buffer))).toEqual([0]);
    for (const buf of [b, c, x]) q.free(buf);
  });

  it('a buffer or kernel of an earlier (closed) device object is refused; the batch stays intact', async () => {
    const old = await open();
    const oldQ = old.queue();
    const oldBuf = oldQ.alloc(16);
    const oldFill = old.kernel('fill_u32');
    await old.close();
    const d = await open();
    expect(d).not.toBe(old);
    const q = d.queue();
    const b = q.alloc(16);
    const fill = d.kernel('fill_u32');
    q.launch(fill, 4, [b, { u32: 3 }, { u32: 4 }]);
    expect(refusal(() => q.launch(fill, 4, [oldBuf, { u32: 9 }, { u32: 4 }]))).toMatchObject({
      name: 'TypeError',
      code: 'ERR_INVALID_ARG_TYPE',
    });
    expect(refusal(() => q.launch(oldFill, 4, [b, { u32: 9 }, { u32: 4 }]))).toMatchObject({
      name: 'TypeError',
      code: 'ERR_INVALID_ARG_TYPE',
    });
    expect(refusal(() => q.copy(oldBuf, b))).toMatchObject({
      name: 'TypeError',
      code: 'ERR_INVALID_ARG_TYPE',
    });
    expect(u32(await q.read(b))).toEqual([3, 3, 3, 3]);
    q.free(b);
  });

  it('a built-in kernel takes one buffer in two roles (copy onto itself, saxpy with x = y)', async () => {
    const d = await open();
    const q = d.queue();
    const b = q.alloc(16);
    q.write(b, new Float32Array([1, 2, 3, 4]));
    q.launch(d.kernel('copy'), 4, [b, b, { u32: 4 }]);
    q.launch(d.kernel('saxpy_f32'), 4, [b, b, { f32: 2 }, { u32: 4 }]);
    expect(f32(await q.read(b))).toEqual([3, 6, 9, 12]);
    q.free(b);
  });

  it('user kernels: an unused binding is fine; one buffer as input and output reads a snapshot; refused first: a buffer bound writable twice, or smaller than its WGSL type', async () => {
    const d = await open();
    const q = d.queue();
    const k = await d.loadKernel(
      `@group(0) @binding(0) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f32>>;
@group(0) @binding(2) var<uniform> unused: u32;
@compute @workgroup_size(1) fn twice(@builtin(global_invocation_id) g: vec3<u32>) {
  if (g.x < arrayLength(&dst)) { dst[g.x] = src[g.x] * 2.0; }
}`,
      'twice',
    );
    const both = await d.loadKernel(
      `@group(0) @binding(0) var<storage, read_write> a: array<u32>;
@group(0) @binding(1) var<storage, read_write> b: array<u32>;
@compute @workgroup_size(1) fn swap(@builtin(global_invocation_id) g: vec3<u32>) {
  let t = a[g.x]; a[g.x] = b[g.x]; b[g.x] = t;
}`,
      'swap',
    );
    const src = q.alloc(32);
    const dst = q.alloc(32);
    const small = q.alloc(8);
    q.write(src, new Float32Array([1, 2, 3, 4, 5, 6, 7, 8]));
    q.launch(k, 2, [src, dst, { u32: 0 }]);
    q.launch(k, 2, [dst, dst, { u32: 0 }]);
    expect(refusal(() => q.launch(both, 1, [src, src]))).toMatchObject({
      name: 'TypeError',
      code: 'ERR_INVALID_ARG_VALUE',
    });
    expect(refusal(() => q.launch(k, 1, [small, dst, { u32: 0 }]))).toMatchObject({
      name: 'DevexitError',
      code: 'ERR_DEVEXIT_OUT_OF_RANGE',
    });
    expect(f32(await q.read(dst))).toEqual([4, 8, 12, 16, 20, 24, 28, 32]);
    for (const b of [src, dst, small]) q.free(b);
  });
});

describe.skipIf(unavailable)('wgpu on the shared layer: open, close, dispose (real Dawn)', () => {
  it('open(0) twice at once gives one device object', async () => {
    const [a, b] = await Promise.all([backend.open(0), backend.open(0)]);
    expect(a).toBe(b);
  });

  it('device.close() finishes queued work: pending reads and flushes settle with their results', async () => {
    const d = await open();
    const q: Queue = d.queue();
    const n = 1 << 16;
    const b = q.alloc(n * 4);
    const k: Kernel = d.kernel('fill_u32');
    for (let i = 0; i < 16; i++) q.launch(k, n, [b, { u32: i }, { u32: n }]);
    const read = q.read(b, 0, 8);
    const flushed = q.flush();
    // Recorded after the read, never submitted before close(): close() hands it over and waits.
    q.launch(k, n, [b, { u32: 99 }, { u32: n }]);
    const late = q.read(b, (n - 1) * 4, 4);
    await d.close();
    expect(u32(await read)).toEqual([15, 15]);
    await expect(flushed).resolves.toBeUndefined();
    expect(u32(await late)).toEqual([99]);
    expect(d.closed).toBe(true);
  });

  it('Symbol.asyncDispose closes the device; the package has named exports only', async () => {
    const d = await open();
    expect(typeof d[Symbol.asyncDispose]).toBe('function');
    await d[Symbol.asyncDispose]();
    expect(d.closed).toBe(true);
    expect(createRequire(__filename)('@devexit/wgpu').default).toBeUndefined();
  });
});
