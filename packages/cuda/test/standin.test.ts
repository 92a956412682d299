// CUDA-specific behaviour that needs kernels to run, on the stand-in libcuda (no NVIDIA GPU
// here); the kernels come from the real NVRTC.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { closeServices } from '@devexit/core';
import { standinCudaPath, standinPtx } from '@devexit/standins-cuda';
import { runChild } from '@devexit/testkit';
import { describe, expect, it } from 'vitest';
import { fixtures, probeIn, skipped, unavailable, useEnv } from './runtimes.js';

const { ADD, SPIN } = require('./fixtures/kernels.cjs') as { ADD: string; SPIN: string };
const STANDIN = { DEVEXIT_CUDA_LIBRARY: standinCudaPath, DEVEXIT_NVRTC_LIBRARY: undefined };
const why = unavailable('standin');
useEnv(STANDIN);

const u32 = (bytes: Uint8Array) => Array.from(new Uint32Array(bytes.slice().buffer));

async function failure(fn: () => unknown): Promise<Record<string, unknown> | undefined> {
  try {
    await fn();
  } catch (err) {
    return err as Record<string, unknown>;
  }
  return undefined;
}

async function childJson(mode: string, env: Record<string, string | undefined>) {
  const r = await runChild({
    script: join(fixtures, 'standinChild.cjs'),
    args: [mode],
    env,
    timeoutMs: 30_000,
  });
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}');
}

describe('cuda: kernels, modules and errors (stand-in libcuda)', () => {
  if (why) return skipped(why);

  it('probe() says it found the stand-in, never passing it off as a driver; devices say what they are (stand-in libcuda)', async () => {
    const { backend } = await import('@devexit/cuda');
    const p = await backend.probe();
    expect(p).toMatchObject({ available: true, devices: 2 });
    if (!p.available) return;
    expect(p.details).toMatch(/^devexit stand-in libcuda \(test double\); NVRTC \d+\.\d+ /);
    expect(p.versions).toMatchObject({
      library: standinCudaPath,
      standin: 'devexit stand-in libcuda (test double)',
    });
    const d = await backend.open(0);
    expect(d.name).toBe('devexit stand-in CUDA device 0');
    expect(d).toMatchObject({ computeCapability: [9, 0], arch: 'sm_90' });
    const other = await backend.open(1);
    expect(other.id).not.toEqual(d.id);
    expect(await backend.open(1)).toBe(other);
    expect(await failure(() => backend.open(2))).toMatchObject({ code: 'ERR_DEVEXIT_OUT_OF_RANGE' });
  });

  it('loadKernel() takes CUDA C (compiled by NVRTC for the device), PTX text, and a module image (stand-in libcuda)', async () => {
    const { backend, compile } = await import('@devexit/cuda');
    const d = await backend.open(0);
    const q = d.queue();
    const b = q.alloc(100 * 4);
    q.fill(b, 1);
    const fromC = await d.loadKernel(ADD, 'add_u32');
    q.launch(fromC, 100, [b, { u32: 2 }, { u32: 100 }]);
    const ptx = await compile(ADD, { arch: 'sm_90' });
    const fromPtx = await d.loadKernel(ptx, 'add_u32');
    q.launch(fromPtx, 100, [b, { u32: 10 }, { u32: 100 }]);
    const fromImage = await d.loadKernel(new TextEncoder().encode(standinPtx(['add_u32'])), 'add_u32');
    q.launch(fromImage, 100, [b, { u32: 100 }, { u32: 100 }]);
    expect(u32(await q.read(b))).toEqual(new Array(100).fill(113));
    q.free(b);
    // Fresh buffers read as zeros (the stand-in's own memory starts as garbage).
    const fresh = q.alloc(10);
    expect(Array.from(await q.read(fresh))).toEqual(new Array(10).fill(0));
    q.free(fresh);
    for (const empty of ['', new Uint8Array(0)]) {
      expect(await failure(() => d.loadKernel(empty, 'k'))).toBeInstanceOf(TypeError);
    }
  });

  it('libcuda and NVRTC failures carry their names as cudaError and vendorError, and change nothing (stand-in libcuda)', async () => {
    const { backend } = await import('@devexit/cuda');
    const d = await backend.open(0);
    const named = (name: string) => ({ code: 'ERR_DEVEXIT_BACKEND', cudaError: name, vendorError: name });
    expect(await failure(() => d.loadKernel(standinPtx(['add_u32']), 'no_such_entry'))).toMatchObject(
      named('CUDA_ERROR_NOT_FOUND'),
    );
    // Valid PTX, but the stand-in has no host version of the kernel.
    expect(await failure(() => d.loadKernel(standinPtx(['mystery']), 'mystery'))).toMatchObject(
      named('CUDA_ERROR_NOT_SUPPORTED'),
    );
    expect(await failure(() => d.loadKernel(standinPtx(['add_u32'], 'sm_100'), 'add_u32'))).toMatchObject(
      named('CUDA_ERROR_INVALID_PTX'),
    );
    const elf = readFileSync(process.execPath).subarray(0, 4096);
    expect(await failure(() => d.loadKernel(elf, 'k'))).toMatchObject(named('CUDA_ERROR_INVALID_IMAGE'));
    const compileErr = await failure(() => d.loadKernel('extern "C" __global__ void k() { nope(); }', 'k'));
    expect(compileErr).toMatchObject(named('NVRTC_ERROR_COMPILATION'));
    expect(String(compileErr?.message)).toMatch(/k\.cu\(1\): error: identifier "nope" is undefined/);
    // The device works on.
    const q = d.queue();
    const b = q.alloc(8);
    q.fill(b, 3);
    expect(u32(await q.read(b))).toEqual([3, 3]);
    q.free(b);
  });

  it('a failing launch surfaces at the next flush with CUDA_ERROR_ILLEGAL_ADDRESS, and the queue goes on (stand-in libcuda)', async () => {
    const { backend } = await import('@devexit/cuda');
    const d = await backend.open(0);
    const q = d.queue();
    const add = await d.loadKernel(ADD, 'add_u32');
    const small = q.alloc(16);
    q.launch(add, 1024, [small, { u32: 1 }, { u32: 1024 }]); // user kernels check no sizes
    expect(await failure(() => q.flush())).toMatchObject({
      code: 'ERR_DEVEXIT_BACKEND',
      cudaError: 'CUDA_ERROR_ILLEGAL_ADDRESS',
    });
    q.launch(d.kernel('fill_u32'), 4, [small, { u32: 9 }, { u32: 4 }]);
    expect(u32(await q.read(small))).toEqual([9, 9, 9, 9]);
    q.free(small);
  });

  it('closeServices(): the running command finishes, queued work is dropped and rejects with ERR_DEVEXIT_DEVICE_CLOSED (stand-in libcuda)', async () => {
    const { backend, compile } = await import('@devexit/cuda');
    const d = await backend.open(1);
    const q = d.queue();
    const spin = await d.loadKernel(SPIN, 'spin');
    const b = q.alloc(16);
    q.fill(b, 5);
    q.launch(spin, 1, [{ u32: 100_000 }]);
    const first = q.read(b);
    await new Promise((r) => setTimeout(r, 20)); // the queue thread now waits inside that read
    for (let i = 0; i < 4; i++) q.launch(spin, 1, [{ u32: 100_000 }]);
    const later = [q.read(b), q.flush()];
    const start = performance.now();
    const report = closeServices({ final: false });
    const ms = performance.now() - start;
    expect(report.map((e) => `${e.device.type}:${e.device.index}/${e.service} ${e.outcome}`)).toEqual(
      expect.arrayContaining(['cuda:1/queue ok', 'cuda-host:0/compiler ok']),
    );
    expect(ms).toBeLessThan(1000); // one spin at most, not the four queued behind it
    expect(u32(await first)).toEqual([5, 5, 5, 5]);
    for (const s of await Promise.allSettled(later)) {
      expect(s).toMatchObject({ status: 'rejected', reason: { code: 'ERR_DEVEXIT_DEVICE_CLOSED' } });
    }
    expect(d.closed).toBe(true);
    expect(await failure(() => q.flush())).toMatchObject({ code: 'ERR_DEVEXIT_DEVICE_CLOSED' });
    // Not final: a new open and a new compile start new services.
    expect((await backend.open(1)).closed).toBe(false);
    expect(await compile(ADD, { arch: 'sm_90' })).toContain('.entry add_u32(');
  });
});

describe('cuda: probe and devices in child processes (stand-in libcuda)', () => {
  if (why) return skipped(why);

  it('probe() without a device says so with CUDA_ERROR_NO_DEVICE (stand-in libcuda)', () => {
    const p = probeIn({ ...STANDIN, DEVEXIT_STANDIN_CUDA_DEVICES: '0' });
    expect(p).toMatchObject({
      available: false,
      reason: 'no CUDA device: cuInit returned CUDA_ERROR_NO_DEVICE (100)',
    });
  });

  it('a device newer than NVRTC knows gets PTX for the newest architecture NVRTC has (stand-in libcuda)', async () => {
    const out = await childJson('arch', { ...STANDIN, DEVEXIT_STANDIN_CUDA_CC: '12.0' });
    expect(out).toEqual({ arch: 'compute_90', cc: [12, 0], saxpy: [3, 5, 7, 9] });
  });

  it('CUDA_ERROR_DEINITIALIZED is "runtime gone": after libcuda tore down under a busy device, its closes end at once and report ok, the process exits 0 (stand-in libcuda, teardown: deinit)', async () => {
    const out = await childJson('closeAfterTeardown', {
      ...STANDIN,
      DEVEXIT_STANDIN_CUDA_TEARDOWN: 'deinit',
    });
    expect(out).toMatchObject({
      tornDown: true,
      read: 'ERR_DEVEXIT_BACKEND CUDA_ERROR_DEINITIALIZED',
      closed: true,
      flushed: 'ERR_DEVEXIT_BACKEND CUDA_ERROR_DEINITIALIZED',
    });
    expect(out.closeMs).toBeLessThan(1000);
    expect(out.report).toEqual(expect.arrayContaining(['cuda:1/queue ok', 'cuda-host:0/compiler ok']));
  });

  it('without NVRTC the device opens, built-in launches fail with a reason naming NVRTC, PTX kernels run (stand-in libcuda)', async () => {
    const out = await childJson('noNvrtc', {
      ...STANDIN,
      DEVEXIT_NVRTC_LIBRARY: '/nonexistent/devexit-test/libnvrtc.so',
    });
    expect(out.available).toBe(true);
    expect(out.details).toMatch(/no NVRTC: NVRTC not found/);
    expect(out.failure.code).toBe('ERR_DEVEXIT_BACKEND');
    expect(out.failure.message).toMatch(
      /the built-in kernels for sm_90 are unavailable: they need NVRTC: NVRTC not found/,
    );
    expect(out.add).toEqual([5, 5]);
  });
});
