import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Device } from '@devexit/core';
import { backend } from '@devexit/cpu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// A user kernel written against the shipped header, compiled with the system C compiler.
const SOURCE = `
#include "devexit_cpu_kernel.h"
/* out[i] = (int32)(a[i] * scale) + bias, for i < n; args: a (f32 buffer), out (i32 buffer), scale f32, bias i32, n u32 */
void devexit_test_scale(uint64_t begin, uint64_t end, const devexit_cpu_arg_v1 *args, uint32_t nargs) {
  if (nargs != 5 || args[0].kind != DEVEXIT_CPU_ARG_BUFFER || args[1].kind != DEVEXIT_CPU_ARG_BUFFER) return;
  const float *a = (const float *)args[0].v.buffer.data;
  int32_t *out = (int32_t *)args[1].v.buffer.data;
  uint64_t n = args[4].v.u32, cap = args[1].v.buffer.size / 4;
  if (args[0].v.buffer.size / 4 < cap) cap = args[0].v.buffer.size / 4;
  if (n > cap) n = cap;
  for (uint64_t i = begin; i < end && i < n; i++) out[i] = (int32_t)(a[i] * args[2].v.f32) + args[3].v.i32;
}
/* Flattened 3D grid: writes each invocation's index. */
void devexit_test_iota(uint64_t begin, uint64_t end, const devexit_cpu_arg_v1 *args, uint32_t nargs) {
  uint32_t *out = (uint32_t *)args[0].v.buffer.data;
  for (uint64_t i = begin; i < end && i < args[0].v.buffer.size / 4; i++) out[i] = (uint32_t)i;
}
`;

const compiler = process.env.CC ?? 'cc';
const include = join(__dirname, '..', 'include');
let dir: string;
let lib: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'devexit-cpu-test-'));
  writeFileSync(join(dir, 'k.c'), SOURCE);
  lib = join(dir, 'libk.so');
  execFileSync(compiler, [
    '-shared',
    '-fPIC',
    '-O2',
    '-Wall',
    '-Werror',
    `-I${include}`,
    '-o',
    lib,
    join(dir, 'k.c'),
  ]);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('cpu user kernels (compiled from C at test time)', () => {
  let device: Device;
  beforeAll(async () => {
    device = await backend.open(0);
  });

  it('runs through the queue and matches a JS reference (n = 300001, split across the pool)', async () => {
    const q = device.queue();
    const k = await device.loadKernel(lib, 'devexit_test_scale');
    expect(k.name).toBe('devexit_test_scale');
    const n = 300_001;
    const a = new Float32Array(n).map((_, i) => Math.fround(Math.sin(i) * 1000));
    const ab = q.alloc(n * 4);
    const out = q.alloc(n * 4);
    q.write(ab, a);
    q.launch(k, n, [ab, out, { f32: 2.5 }, { i32: -7 }, { u32: n }]);
    const got = new Int32Array((await q.read(out)).slice().buffer);
    for (let i = 0; i < n; i++) {
      const want = Math.trunc(Math.fround(a[i]! * 2.5)) - 7;
      if (got[i] !== want) expect(got[i], `out[${i}]`).toBe(want);
    }
  });

  it('flattens a 3D grid to x*y*z invocations', async () => {
    const q = device.queue();
    const k = await device.loadKernel(lib, 'devexit_test_iota');
    const b = q.alloc(4 * 5 * 6 * 4);
    q.launch(k, [4, 5, 6], [b]);
    expect(Array.from(new Uint32Array((await q.read(b)).slice().buffer))).toEqual(
      Array.from({ length: 120 }, (_, i) => i),
    );
  });

  it('loads a kernel from the shared object bytes, leaving no temp file behind', async () => {
    const q = device.queue();
    const temps = () =>
      readdirSync(tmpdir()).filter((n) => n.startsWith('devexit-cpu-') && !n.startsWith('devexit-cpu-test-'));
    const before = temps();
    const k = await device.loadKernel(new Uint8Array(readFileSync(lib)), 'devexit_test_iota');
    await expect(device.loadKernel(new Uint8Array(16), 'devexit_test_iota')).rejects.toMatchObject({
      code: 'ERR_DEVEXIT_BACKEND',
    });
    expect(temps()).toEqual(before);
    const b = q.alloc(40);
    q.launch(k, 10, [b]);
    expect(Array.from(new Uint32Array((await q.read(b)).slice().buffer))).toEqual([
      0, 1, 2, 3, 4, 5, 6, 7, 8, 9,
    ]);
  });

  it('reports a missing object or symbol as ERR_DEVEXIT_BACKEND with the loader message', async () => {
    await expect(device.loadKernel(join(dir, 'nope.so'), 'f')).rejects.toMatchObject({
      code: 'ERR_DEVEXIT_BACKEND',
      message: expect.stringContaining('nope.so'),
    });
    await expect(device.loadKernel(lib, 'no_such_symbol')).rejects.toMatchObject({
      code: 'ERR_DEVEXIT_BACKEND',
      message: expect.stringContaining('no_such_symbol'),
    });
    await expect(device.loadKernel(lib, 'not an identifier')).rejects.toThrow(TypeError);
  });
});
