import { join } from 'node:path';
import type { Device, Queue } from '@devexit/core';
import { backend, configuredDeviceCount } from '@devexit/cpu';
import { ending, runMany, summary, testRuns } from '@devexit/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const fixture = (name: string) => join(__dirname, 'fixtures', name);
const u32 = (b: Uint8Array) => new Uint32Array(b.slice().buffer);
const f32 = (b: Uint8Array) => new Float32Array(b.slice().buffer);

describe('cpu queue and kernels', () => {
  let device: Device;
  let q: Queue;
  beforeAll(async () => {
    device = await backend.open(0);
    q = device.queue();
  });
  afterAll(async () => {
    await device.close();
  });

  // Issue 18: one settings grammar. " 2 " made cpu unavailable before (a reason string, not 2).
  it('reads DEVEXIT_CPU_DEVICES with core grammar: trimmed, a bad value warned about, the default kept', () => {
    expect(configuredDeviceCount({})).toBe(1);
    expect(configuredDeviceCount({ DEVEXIT_CPU_DEVICES: '3' })).toBe(3);
    expect(configuredDeviceCount({ DEVEXIT_CPU_DEVICES: ' 2 ' })).toBe(2);
    expect(configuredDeviceCount({ DEVEXIT_CPU_DEVICES: '0' })).toBe(1);
    expect(configuredDeviceCount({ DEVEXIT_CPU_DEVICES: 'lots' })).toBe(1);
  });

  it('names the device after its thread count', () => {
    expect(device.name).toMatch(/^cpu \(\d+ threads\)$/);
  });

  it('splits a large launch across the pool: saxpy and sum over 2^20 elements', async () => {
    const n = 1 << 20;
    const x = q.alloc(n * 4);
    const y = q.alloc(n * 4);
    const s = q.alloc(4);
    const xs = new Float32Array(n).map((_, i) => (i % 7) - 3);
    q.write(x, xs);
    q.fill(y, 0x3f800000); // 1.0f
    q.launch(device.kernel('saxpy_f32'), n, [x, y, { f32: 2 }, { u32: n }]);
    const ys = f32(await q.read(y));
    for (let i = 0; i < n; i += 4099) expect(ys[i]).toBe(2 * xs[i]! + 1);
    expect(ys[n - 1]).toBe(2 * xs[n - 1]! + 1);
    // Small integers: every partial sum is exact in float, whatever the chunk order.
    q.launch(device.kernel('sum_f32'), n, [y, s, { u32: n }]);
    let want = 0;
    for (const v of ys) want += v;
    expect(f32(await q.read(s))[0]).toBe(want);
    q.free(x);
    q.free(y);
    q.free(s);
  });

  it('refuses a built-in launch whose n exceeds its buffers, and keeps a large grid inside them', async () => {
    const b = q.alloc(16);
    const guard = q.alloc(16);
    q.fill(guard, 7);
    expect(() => q.launch(device.kernel('fill_u32'), 4, [b, { u32: 9 }, { u32: 5 }])).toThrow(
      expect.objectContaining({ code: 'ERR_DEVEXIT_OUT_OF_RANGE' }),
    );
    // The grid may exceed n: the kernel still stops at n.
    q.launch(device.kernel('fill_u32'), 1 << 16, [b, { u32: 9 }, { u32: 4 }]);
    expect(Array.from(u32(await q.read(b)))).toEqual([9, 9, 9, 9]);
    expect(Array.from(u32(await q.read(guard)))).toEqual([7, 7, 7, 7]);
    q.free(b);
    q.free(guard);
  });

  it('rejects args that do not match a built-in signature with a TypeError', () => {
    const b = q.alloc(16);
    expect(() => q.launch(device.kernel('fill_u32'), 4, [b, { f32: 1 }, { u32: 4 }])).toThrow(TypeError);
    expect(() => q.launch(device.kernel('copy'), 4, [b, { u32: 4 }])).toThrow(
      /3 arguments for copy\(src: buffer, dst: buffer, n: u32\)/,
    );
    q.free(b);
  });

  it('refuses a freed buffer with a TypeError naming it', async () => {
    const b = q.alloc(16);
    q.free(b);
    expect(() => q.write(b, new Uint8Array(4))).toThrow(/buffer was freed/);
    await expect(q.read(b)).rejects.toThrow(TypeError);
    expect(() => q.free(b)).toThrow(TypeError);
  });

  it('explicit close finishes queued work (documented: finish)', async () => {
    const d = await backend.open(0);
    expect(d).toBe(device);
    const n = 1 << 18;
    const b = q.alloc(n * 4);
    const k = d.kernel('fill_u32');
    for (let i = 1; i <= 64; i++) q.launch(k, n, [b, { u32: i }, { u32: n }]);
    const last = q.read(b, (n - 1) * 4, 4);
    const flushed = q.flush();
    await d.close();
    expect(u32(await last)[0]).toBe(64);
    await expect(flushed).resolves.toBeUndefined();
    // A later open gives a fresh device with a working queue.
    device = await backend.open(0);
    expect(device).not.toBe(d);
    q = device.queue();
    const c = q.alloc(8);
    q.fill(c, 3);
    expect(Array.from(u32(await q.read(c)))).toEqual([3, 3]);
  });
});

describe('cpu devices in child processes', () => {
  it('DEVEXIT_CPU_DEVICES=3: three busy devices, process.exit, each queue closed once (10 runs)', async () => {
    const results = await runMany(testRuns(10), {
      script: fixture('multiDevice.cjs'),
      env: { DEVEXIT_CPU_DEVICES: '3' },
      timeoutMs: 20_000,
    });
    for (const r of results) {
      expect(summary(r), r.stderr).toEqual({
        code: 0,
        signal: null,
        timedOut: false,
        crashed: false,
        closes: { 'cpu:0/queue': 1, 'cpu:1/queue': 1, 'cpu:2/queue': 1 },
        failed: [],
      });
      expect(r.stdout).toContain('busy 3');
    }
  });

  it('a device shared by main and a terminated worker: main still completes, closed once (10 runs)', async () => {
    const results = await runMany(testRuns(10), {
      script: fixture('sharedWithWorker.cjs'),
      timeoutMs: 20_000,
    });
    for (const r of results) {
      expect(summary(r), `${r.stdout}\n${r.stderr}`).toEqual({
        code: 0,
        signal: null,
        timedOut: false,
        crashed: false,
        closes: { 'cpu:0/queue': 1 },
        failed: [],
      });
      expect(r.stdout).toContain('main ok');
    }
  });

  it('an explicit close racing the exit close: one close, no crash, no hang (3 delays x 6 runs)', async () => {
    for (const delay of ['0', '2', '10']) {
      const results = await runMany(testRuns(6), {
        script: fixture('closeRace.cjs'),
        args: [delay],
        timeoutMs: 20_000,
      });
      for (const r of results) {
        const s = summary(r);
        expect({ ...s, closes: undefined }, r.stderr).toEqual({
          code: 0,
          signal: null,
          timedOut: false,
          crashed: false,
          closes: undefined,
          failed: [],
        });
        // Exit took the registration first (1 close reported) or the explicit close unregistered it (0).
        expect([0, 1]).toContain(s.closes['cpu:0/queue'] ?? 0);
      }
    }
  });

  it('closeServices() with reads queued: they settle (rejected as closed) and the process ends, no hang (5 runs)', async () => {
    const runs = await runMany(testRuns(5), {
      script: fixture('closeServicesPending.cjs'),
      timeoutMs: 20_000,
    });
    for (const r of runs) {
      expect(ending(r), r.stderr).toEqual({
        code: 0,
        signal: null,
        timedOut: false,
      });
      const codes: string[] = JSON.parse(r.stdout);
      expect(codes).toHaveLength(3);
      // Whatever the queue had not reached when the close came is rejected, never left pending.
      for (const c of codes) expect(['ok', 'ERR_DEVEXIT_DEVICE_CLOSED']).toContain(c);
      expect(codes).toContain('ERR_DEVEXIT_DEVICE_CLOSED');
      // Closed once, by closeServices(); exit found nothing left to close.
      expect(r.report.map((e) => `${e.device.type}:${e.device.index} ${e.layer} ${e.outcome}`)).toEqual([
        'cpu:0 explicit ok',
      ]);
    }
  });

  it('a dropped flush rejected by closeServices() is not an unhandled rejection (10 runs)', async () => {
    const runs = await runMany(testRuns(10), { script: fixture('droppedFlush.cjs'), timeoutMs: 20_000 });
    for (const r of runs) {
      expect(ending(r), r.stderr).toEqual({
        code: 0,
        signal: null,
        timedOut: false,
      });
      expect(r.stdout).toMatch(/^alive (ok|ERR_DEVEXIT_DEVICE_CLOSED)$/m);
    }
  });

  it('no queue starts once the process is exiting (ERR_DEVEXIT_EXITING)', async () => {
    const [r] = await runMany(testRuns(1), { script: fixture('afterExit.cjs'), timeoutMs: 20_000 });
    expect(r!.code, r!.stderr).toBe(0);
    expect(r!.stdout.trim()).toBe('ERR_DEVEXIT_EXITING');
  });
});
