// HIP-specific behaviour that needs kernels to run, on the stand-in libamdhip64 (no AMD GPU here).
import { join } from 'node:path';
import { closeServices } from '@devexit/core';
import * as hip from '@devexit/hip';
import { standinHipPath } from '@devexit/standins-hip';
import { crashed, outcomes, runChild, runMany, runUntilHit, summary, testRuns } from '@devexit/testkit';
import { describe, expect, it } from 'vitest';

// Read when the library first loads (the first probe), not at import.
process.env.DEVEXIT_HIP_LIBRARY = standinHipPath;
const { backend } = hip;

const fixture = join(__dirname, 'fixtures', 'standinChild.cjs');
const u32 = (bytes: Uint8Array) => new Uint32Array(bytes.slice().buffer);

async function failure(fn: () => unknown): Promise<Record<string, unknown> | undefined> {
  try {
    await fn();
  } catch (err) {
    return err as Record<string, unknown>;
  }
  return undefined;
}

const ADD =
  'extern "C" __global__ void add_u32(unsigned* b, unsigned v, unsigned n) { /* host function in the stand-in */ }';

describe('hip kernels and errors (stand-in libamdhip64)', () => {
  it('probe() says which library it is: the stand-in, never passed off as ROCm (stand-in libamdhip64)', async () => {
    const p = await backend.probe();
    expect(p).toMatchObject({
      available: true,
      devices: 2,
      details: 'devexit stand-in libamdhip64 (test double)',
    });
    expect(p.versions?.library).toBe(standinHipPath);
  });

  it('loadKernel() from HIP C++ (through hiprtc) and from a code object run on the queue (stand-in libamdhip64)', async () => {
    const d = await backend.open(0);
    const q = d.queue();
    const b = q.alloc(100 * 4);
    q.fill(b, 1);
    const fromSource = await d.loadKernel(ADD, 'add_u32');
    expect(fromSource.name).toBe('add_u32');
    q.launch(fromSource, 100, [b, { u32: 2 }, { u32: 100 }]);
    const code = await hip.compile(ADD, { arch: 'gfx90a' });
    const fromCode = await d.loadKernel(code, 'add_u32');
    q.launch(fromCode, 100, [b, { u32: 10 }, { u32: 100 }]);
    expect(u32(await q.read(b))).toEqual(new Uint32Array(100).fill(13));
    q.free(b);
  });

  it('HIP and hiprtc failures carry their error names (stand-in libamdhip64)', async () => {
    const d = await backend.open(0);
    expect(await failure(() => d.loadKernel(ADD, 'no_such_entry'))).toMatchObject({
      code: 'ERR_DEVEXIT_BACKEND',
      hipError: 'hipErrorNotFound',
    });
    expect(
      await failure(() => d.loadKernel(new Uint8Array([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1]), 'k')),
    ).toMatchObject({
      code: 'ERR_DEVEXIT_BACKEND',
      hipError: 'hipErrorInvalidImage',
    });
    const compileErr = await failure(() => d.loadKernel('#error this does not compile\n', 'k'));
    expect(compileErr).toMatchObject({ code: 'ERR_DEVEXIT_BACKEND', hipError: 'HIPRTC_ERROR_COMPILATION' });
    expect(String(compileErr?.message)).toContain('this does not compile');
  });

  it('a failing launch surfaces at the next flush with its HIP name, and the queue goes on (stand-in libamdhip64)', async () => {
    const d = await backend.open(0);
    const q = d.queue();
    const small = q.alloc(16);
    // A built-in that would run past its buffer is refused before it reaches the device...
    expect(() => q.launch(d.kernel('fill_u32'), 1024, [small, { u32: 1 }, { u32: 1024 }])).toThrow(
      expect.objectContaining({ code: 'ERR_DEVEXIT_OUT_OF_RANGE' }),
    );
    // ...a user kernel is the device's business: past the end of the buffer, HIP says so.
    const add = await d.loadKernel(ADD, 'add_u32');
    q.launch(add, 1024, [small, { u32: 1 }, { u32: 1024 }]);
    const err = await failure(() => q.flush());
    expect(err).toMatchObject({
      code: 'ERR_DEVEXIT_BACKEND',
      vendorError: 'hipErrorIllegalAddress',
      hipError: 'hipErrorIllegalAddress',
    });
    expect(String(err?.message)).toContain('hipErrorIllegalAddress (700)');
    q.launch(d.kernel('fill_u32'), 4, [small, { u32: 9 }, { u32: 4 }]);
    expect(u32(await q.read(small))).toEqual(new Uint32Array(4).fill(9));
    q.free(small);
  });

  it('devices are distinct and opened once each (stand-in libamdhip64)', async () => {
    const [a, b] = await Promise.all([backend.open(0), backend.open(1)]);
    expect(a.id).not.toEqual(b.id);
    expect(await backend.open(1)).toBe(b);
    expect(b.name).toBe('devexit stand-in HIP device 1');
    expect(await failure(() => backend.open(2))).toMatchObject({ code: 'ERR_DEVEXIT_OUT_OF_RANGE' });
  });
});

describe('hip services closed by closeServices() (stand-in libamdhip64)', () => {
  it('work that had not started settles with ERR_DEVEXIT_DEVICE_CLOSED, the running read finishes (stand-in libamdhip64)', async () => {
    const d = await backend.open(1);
    const q = d.queue();
    const sleep = await d.loadKernel('extern "C" __global__ void sleep_us(unsigned us) {}', 'sleep_us');
    const b = q.alloc(16);
    q.fill(b, 5);
    q.launch(sleep, 1, [{ u32: 50_000 }]);
    const first = q.read(b);
    await new Promise((r) => setTimeout(r, 10)); // the queue thread is now waiting inside that read
    for (let i = 0; i < 4; i++) q.launch(sleep, 1, [{ u32: 50_000 }]);
    const later = [q.read(b), q.flush()];
    const report = closeServices({ final: false });
    expect(report.map((e) => `${e.device.type}:${e.device.index}/${e.service} ${e.outcome}`)).toContain(
      'hip:1/queue ok',
    );
    expect(u32(await first)).toEqual(new Uint32Array(4).fill(5));
    for (const s of await Promise.allSettled(later)) {
      expect(s).toMatchObject({ status: 'rejected', reason: { code: 'ERR_DEVEXIT_DEVICE_CLOSED' } });
    }
    expect(await failure(() => q.flush())).toMatchObject({ code: 'ERR_DEVEXIT_DEVICE_CLOSED' });
  });
});

describe('hip probe and exit in child processes (stand-in libamdhip64)', () => {
  const probeIn = async (env: Record<string, string>) => {
    const r = await runChild({ script: fixture, args: ['probe'], env, timeoutMs: 20_000 });
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout.trim());
  };

  it('probe() without a device says so with the HIP error name (stand-in libamdhip64)', async () => {
    const p = await probeIn({ DEVEXIT_HIP_LIBRARY: standinHipPath, DEVEXIT_STANDIN_HIP_DEVICES: '0' });
    expect(p).toMatchObject({ available: false });
    expect(p.reason).toBe(
      'no HIP device: hipGetDeviceCount returned hipErrorNoDevice (100) (hipInit returned hipErrorInvalidDevice (101))',
    );
  });

  it('probe() with the library missing names what it tried (no library loaded)', async () => {
    const p = await probeIn({ DEVEXIT_HIP_LIBRARY: '/nonexistent/libamdhip64.so' });
    expect(p).toMatchObject({ available: false });
    expect(p.reason).toMatch(
      /^library missing: libamdhip64 not found \(\/nonexistent\/libamdhip64\.so: cannot open/,
    );
  });

  it('two devices inside HIP at process.exit: each queue closes once; with DEVEXIT_GUARD=0 the stand-in teardown crashes it (stand-in libamdhip64)', async () => {
    const opts = { script: fixture, args: ['twoDevices'], timeoutMs: 20_000 };
    const on = await runMany(testRuns(10), { ...opts, env: { DEVEXIT_HIP_LIBRARY: standinHipPath } });
    for (const r of on) {
      expect(summary(r), r.stderr).toEqual({
        code: 0,
        signal: null,
        timedOut: false,
        crashed: false,
        closes: { 'hip:0/queue': 1, 'hip:1/queue': 1, 'hip-host:0/compiler': 1 },
        failed: [],
      });
    }
    // The control's crash is a race: runs until one crashes, at most 20.
    const off = await runUntilHit(20, {
      ...opts,
      env: { DEVEXIT_HIP_LIBRARY: standinHipPath, DEVEXIT_GUARD: '0' },
    });
    const crashes = off.filter((r) => crashed(r)).length;
    console.log(
      `stand-in twoDevices: guard on ${JSON.stringify(outcomes(on))}; DEVEXIT_GUARD=0 ${JSON.stringify(outcomes(off))}`,
    );
    expect(crashes).toBeGreaterThanOrEqual(1);
  });
});
