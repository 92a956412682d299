import { createRequire } from 'node:module';
import { dirname, isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Backend, Device, DeviceBuffer, Kernel, Queue } from '@devexit/core';
import { type ChildResult, outcomes, runMany, runUntilHit, summary, testRuns } from '@devexit/testkit';
import { describe, expect, it } from 'vitest';
import { defineArgumentRules } from './argumentRules.js';

export {
  defineNativeLaunchBounds,
  type NativeLaunchBoundsOptions,
  type RawQueueAddon,
} from './nativeLaunch.js';
export {
  defineOpenCloseMemory,
  OPEN_CLOSE_GROWTH_LIMIT,
  type OpenCloseMemoryOptions,
} from './openCloseMemory.js';

export interface ConformanceOptions {
  /** Appears in every test name. */
  name: string;
  /** Appended to test names when a stand-in runtime is used, e.g. 'stand-in libamdhip64'. */
  label?: string | undefined;
  /** The in-process Backend. */
  load: () => Promise<Backend>;
  /** What the exit-path child requires (a package name or an absolute path); it must export `backend`. */
  childModule: string;
  /** Extra environment for the children. */
  childEnv?: Record<string, string | undefined>;
  /** Children per exit row (default 20). */
  runs?: number;
  /**
   * Process-wide services besides the device queue that a child using device 0 starts, and that
   * exit closes too: `type:index/service` -> times (e.g. { 'cuda-host:0/compiler': 1 }, the
   * compiler service that compiled the built-in kernels). Default none.
   */
  otherCloses?: Record<string, number>;
}

/** The exit-path rows and what each child must end with. */
export const EXIT_ROWS = [
  { row: 'natural', title: 'natural end with launches queued', code: 0, stdout: 'busy' },
  { row: 'exit', title: 'process.exit mid-launch', code: 0, stdout: 'busy' },
  { row: 'uncaught', title: 'uncaught exception mid-flush', code: 1, stdout: 'busy' },
  { row: 'worker', title: 'device owned by a busy Worker, main exits', code: 0, stdout: 'busy' },
  {
    row: 'workerExit',
    title: 'process.exit in a Worker, the process goes on and exits 0',
    code: 0,
    stdout: 'main ok',
  },
  {
    row: 'sigint',
    title: 'SIGINT handler that exits',
    code: 130,
    stdout: 'busy',
    signalOnReady: 'SIGINT' as const,
  },
] as const;

/** The child fixture, for backends that add rows of their own. */
export const exitChildPath: string = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  'fixtures',
  'exitChild.cjs',
);

const SIZES = [1, 63, 64, 1000, 4099];
const CHILD_TIMEOUT_MS = 20_000;

function resolveChildModule(spec: string): string {
  if (isAbsolute(spec)) return spec;
  try {
    // From the calling package: lets a backend's own tests resolve its package name.
    return createRequire(join(process.cwd(), 'package.json')).resolve(spec);
  } catch {
    return spec;
  }
}

const u32 = (bytes: Uint8Array) => new Uint32Array(bytes.slice().buffer);
const f32 = (bytes: Uint8Array) => new Float32Array(bytes.slice().buffer);

function seeded(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = (s / 0x100000000) * 4 - 2;
  }
  return out;
}

/** Rejects or throws: either way the error is returned. */
async function failure(fn: () => unknown): Promise<unknown> {
  try {
    await fn();
  } catch (err) {
    return err;
  }
  return undefined;
}

function expectTypeError(err: unknown, argument: string): void {
  expect(err, `a TypeError naming '${argument}'`).toBeInstanceOf(TypeError);
  expect((err as Error).message).toContain(argument);
}

/** A number outside its argument's range: RangeError ERR_OUT_OF_RANGE, as core's deviceId('cpu', -1). */
function expectRangeError(err: unknown, argument: string): void {
  expect(err, `a RangeError naming '${argument}'`).toBeInstanceOf(RangeError);
  expect(err).toMatchObject({ code: 'ERR_OUT_OF_RANGE' });
  expect((err as Error).message).toContain(argument);
}

function describeChild(r: ChildResult): string {
  return `code=${r.code} signal=${r.signal} timedOut=${r.timedOut}\nstdout: ${r.stdout.slice(-400)}\nstderr: ${r.stderr.slice(-1200)}`;
}

/** Declares the conformance suite (results, typed errors, close semantics, exit-path matrix). */
export function defineConformance(options: ConformanceOptions): void {
  const runs = testRuns(options.runs ?? 20);
  const otherCloses = options.otherCloses ?? {};
  const title = (what: string) => `${options.name}: ${what}${options.label ? ` [${options.label}]` : ''}`;
  let backend: Backend | undefined;
  let device: Device | undefined;
  const getBackend = async () => {
    backend ??= await options.load();
    return backend;
  };
  const getDevice = async () => {
    if (!device || device.closed) device = await (await getBackend()).open(0);
    return device;
  };
  const withQueue = async (): Promise<[Device, Queue]> => {
    const d = await getDevice();
    return [d, d.queue()];
  };

  const child = (
    row: string,
    env: Record<string, string | undefined> = {},
    signalOnReady?: NodeJS.Signals,
  ) => ({
    script: exitChildPath,
    args: [resolveChildModule(options.childModule), row],
    env: { ...options.childEnv, ...env },
    timeoutMs: CHILD_TIMEOUT_MS,
    ...(signalOnReady ? { signalOnReady } : {}),
  });

  describe(title('results'), () => {
    it('probe() says available with at least one device', async () => {
      const b = await getBackend();
      const probe = await b.probe();
      expect(probe).toMatchObject({ available: true });
      if (probe.available) expect(probe.devices).toBeGreaterThanOrEqual(1);
      expect(await b.deviceCount()).toBeGreaterThanOrEqual(1);
    });

    it('open() twice gives the same device', async () => {
      const b = await getBackend();
      const a = await b.open(0);
      const again = await b.open(0);
      expect(again.id).toEqual(a.id);
      expect(a.backend).toBe(b.name);
      expect(a.closed).toBe(false);
    });

    for (const n of SIZES) {
      it(`buffers round-trip: write/read, offsets, fill, copy (n = ${n})`, async () => {
        const [, q] = await withQueue();
        const bytes = (n + 4) * 4;
        const a = q.alloc(bytes);
        const b = q.alloc(bytes);
        expect(a.size).toBe(bytes);
        const data = new Uint32Array(n + 4).map((_, i) => (i * 2654435761) >>> 0);
        q.write(a, data);
        expect(u32(await q.read(a))).toEqual(data);
        // Offsets on write and read.
        q.write(a, new Uint32Array([7, 8]), 8);
        const part = u32(await q.read(a, 4, 12));
        expect(Array.from(part)).toEqual([data[1], 7, 8]);
        // fill with offset and length, then copy with offsets.
        q.fill(b, 0xdeadbeef);
        q.fill(b, 5, 4, n * 4);
        q.copy(a, b, 8, 8, 0);
        const want = new Uint32Array(n + 4).fill(0xdeadbeef);
        want.fill(5, 1, n + 1);
        want[0] = 7;
        want[1] = 8;
        expect(u32(await q.read(b))).toEqual(want);
        // write() copies its data at call time.
        const src = new Uint32Array([1, 2, 3, 4]);
        q.write(a, src);
        src.fill(0);
        expect(Array.from(u32(await q.read(a, 0, 16)))).toEqual([1, 2, 3, 4]);
        await q.flush();
        q.free(a);
        q.free(b);
      });

      it(`built-in kernels against a JS reference (n = ${n})`, async () => {
        const [d, q] = await withQueue();
        const out = q.alloc(n * 4);
        q.launch(d.kernel('fill_u32'), n, [out, { u32: 0xa5a5a5a5 }, { u32: n }]);
        expect(u32(await q.read(out))).toEqual(new Uint32Array(n).fill(0xa5a5a5a5));

        const src = q.alloc(n * 4);
        const ints = new Uint32Array(n).map((_, i) => i * 3 + 1);
        q.write(src, ints);
        q.launch(d.kernel('copy'), n, [src, out, { u32: n }]);
        expect(u32(await q.read(out))).toEqual(ints);

        const x = seeded(n, 1);
        const y = seeded(n, 2);
        const xb = q.alloc(n * 4);
        const yb = q.alloc(n * 4);
        q.write(xb, x);
        q.write(yb, y);
        const a = 1.5;
        q.launch(d.kernel('saxpy_f32'), n, [xb, yb, { f32: a }, { u32: n }]);
        const got = f32(await q.read(yb));
        for (let i = 0; i < n; i++) {
          const want = Math.fround(a * x[i]! + y[i]!);
          expect(Math.abs(got[i]! - want), `saxpy_f32 y[${i}]`).toBeLessThanOrEqual(
            1e-6 * (1 + Math.abs(want)),
          );
        }

        const sum = q.alloc(4);
        q.write(sum, new Float32Array([1234]));
        q.launch(d.kernel('sum_f32'), n, [xb, sum, { u32: n }]);
        let want = 0;
        let mag = 0;
        for (let i = 0; i < n; i++) {
          want += x[i]!;
          mag += Math.abs(x[i]!);
        }
        const total = f32(await q.read(sum))[0]!;
        expect(Math.abs(total - want), 'sum_f32').toBeLessThanOrEqual(n * 1.2e-7 * mag + 1e-6);
        for (const b of [out, src, xb, yb, sum]) q.free(b);
        await q.flush();
      });
    }

    it('an aborted read or flush rejects with an AbortError; the queue goes on in order (10 rounds); an aborted open rejects', async () => {
      const b = await getBackend();
      const [d, q] = await withQueue();
      const n = 1 << 16;
      const buf = q.alloc(n * 4);
      const fill = d.kernel('fill_u32');
      for (let round = 1; round <= 10; round++) {
        for (let i = 0; i < 4; i++) q.launch(fill, n, [buf, { u32: round * 10 + i }, { u32: n }]);
        const ac = new AbortController();
        const read = q.read(buf, 0, 4, { signal: ac.signal });
        const flush = q.flush({ signal: ac.signal });
        ac.abort();
        expect(await failure(() => read)).toMatchObject({ name: 'AbortError', code: 'ABORT_ERR' });
        expect(await failure(() => flush)).toMatchObject({ name: 'AbortError', code: 'ABORT_ERR' });
        // The aborted read still ran in order: what follows sees the last fill of this round.
        expect(u32(await q.read(buf, (n - 1) * 4, 4))[0]).toBe(round * 10 + 3);
      }
      expect(await failure(() => q.read(buf, 0, 4, { signal: AbortSignal.abort() }))).toMatchObject({
        name: 'AbortError',
      });
      expect(await failure(() => b.open(0, { signal: AbortSignal.abort() }))).toMatchObject({
        name: 'AbortError',
      });
      expectTypeError(await failure(() => q.flush({ signal: 'now' as never })), 'signal');
      q.free(buf);
      await q.flush();
    });

    it("options objects refuse a key they do not take (a misspelt 'signal' is not ignored)", async () => {
      const b = await getBackend();
      const [, q] = await withQueue();
      const buf = q.alloc(16);
      const calls: [string, () => unknown][] = [
        ['read() options', () => q.read(buf, 0, 4, { sigal: AbortSignal.abort() } as never)],
        ['flush() options', () => q.flush({ bogus: 1 } as never)],
        ['open() options', () => b.open(0, { signal: undefined, bogus: 1 } as never)],
      ];
      for (const [what, call] of calls) {
        expect(await failure(call), what).toMatchObject({
          name: 'TypeError',
          code: 'ERR_INVALID_ARG_VALUE',
          message: expect.stringContaining(`${what} has an unknown option`),
        });
      }
      // Refused before anything was queued: the queue goes on.
      expect(await q.read(buf, 0, 4, { signal: undefined })).toHaveLength(4);
      q.free(buf);
      await q.flush({});
    });

    it('commands run in enqueue order across kinds', async () => {
      const [d, q] = await withQueue();
      const n = 4096;
      const b = q.alloc(n * 4);
      const reads: Promise<Uint8Array>[] = [];
      for (let v = 1; v <= 8; v++) {
        if (v % 2) q.fill(b, v);
        else q.launch(d.kernel('fill_u32'), n, [b, { u32: v }, { u32: n }]);
        reads.push(q.read(b, (n - 1) * 4, 4));
      }
      const seen = (await Promise.all(reads)).map((r) => u32(r)[0]);
      expect(seen).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      q.free(b);
    });
  });

  describe(title('typed errors'), () => {
    it('open(out of range) rejects with ERR_DEVEXIT_OUT_OF_RANGE', async () => {
      const b = await getBackend();
      const count = await b.deviceCount();
      const err = await failure(() => b.open(count));
      expect(err).toMatchObject({ code: 'ERR_DEVEXIT_OUT_OF_RANGE' });
    });

    it('bad arguments throw a TypeError (a wrong type) or RangeError (a number out of range) naming the argument', async () => {
      const b = await getBackend();
      const [d, q] = await withQueue();
      const buf = q.alloc(16);
      const bad = (v: unknown) => v as never;
      expectTypeError(await failure(() => b.open(bad('0'))), 'index');
      expectRangeError(await failure(() => b.open(1.5)), 'index');
      expectRangeError(await failure(() => b.open(-1)), 'index');
      expectRangeError(await failure(() => q.alloc(-1)), 'bytes');
      expectTypeError(await failure(() => q.alloc(bad('16'))), 'bytes');
      expectTypeError(await failure(() => q.write(buf, bad('data'))), 'data');
      expectTypeError(await failure(() => q.write(bad({ size: 16 }), new Uint8Array(4))), 'buffer');
      expectTypeError(await failure(() => d.kernel(bad('no_such_kernel'))), 'name');
      const fill = d.kernel('fill_u32');
      expectRangeError(await failure(() => q.launch(fill, -1, [buf, { u32: 1 }, { u32: 4 }])), 'grid');
      expectRangeError(await failure(() => q.launch(fill, 4, [buf, { u32: -1 }, { u32: 4 }])), 'args[1].u32');
      expectTypeError(await failure(() => q.launch(fill, 4, bad('args'))), 'args');
      expectTypeError(await failure(() => q.launch(fill, 4, [buf, bad({ u64: 1 }), { u32: 4 }])), 'args');
      expectTypeError(await failure(() => q.launch(bad({ name: 'fake' }), 4, [])), 'kernel');
      q.free(buf);
    });

    it('reads and writes past the end of a buffer fail with ERR_DEVEXIT_OUT_OF_RANGE', async () => {
      const [, q] = await withQueue();
      const buf = q.alloc(16);
      expect(await failure(() => q.read(buf, 8, 16))).toMatchObject({ code: 'ERR_DEVEXIT_OUT_OF_RANGE' });
      expect(await failure(() => q.write(buf, new Uint8Array(8), 12))).toMatchObject({
        code: 'ERR_DEVEXIT_OUT_OF_RANGE',
      });
      q.free(buf);
    });
  });

  describe(title('launch and argument rules'), () => {
    defineArgumentRules(getDevice);
  });

  describe(title('close semantics'), () => {
    it('close() settles queued work, is idempotent, then calls fail with ERR_DEVEXIT_DEVICE_CLOSED', async () => {
      const [d, q] = await withQueue();
      const n = 1 << 16;
      const b = q.alloc(n * 4);
      const k: Kernel = d.kernel('fill_u32');
      for (let i = 0; i < 16; i++) q.launch(k, n, [b, { u32: i }, { u32: n }]);
      const read = q.read(b, 0, 4);
      const flushed = q.flush();
      const first = d.close();
      const second = d.close();
      await Promise.all([first, second]);
      await d.close();
      expect(d.closed).toBe(true);
      // Finished (the value of the last fill) or dropped with a typed error: never left pending.
      const [r, f] = await Promise.allSettled([read, flushed]);
      for (const s of [r, f]) {
        if (s!.status === 'rejected') expect(s!.reason).toMatchObject({ code: 'ERR_DEVEXIT_DEVICE_CLOSED' });
      }
      if (r!.status === 'fulfilled') expect(u32(r!.value)[0]).toBe(15);
      for (const call of [
        () => d.queue(),
        () => q.alloc(4),
        () => q.write(b as DeviceBuffer, new Uint8Array(4)),
        () => q.launch(k, 1, [b, { u32: 1 }, { u32: 1 }]),
        () => q.read(b),
        () => q.flush(),
      ]) {
        expect(await failure(call)).toMatchObject({ code: 'ERR_DEVEXIT_DEVICE_CLOSED' });
      }
    });

    it('await device[Symbol.asyncDispose]() closes it like close(); the next open() gives a new device', async () => {
      const b = await getBackend();
      const [d, q] = await withQueue();
      const buf = q.alloc(64);
      q.fill(buf, 9);
      const read = q.read(buf, 0, 4);
      await d[Symbol.asyncDispose]();
      expect(d.closed).toBe(true);
      const r = await Promise.allSettled([read]);
      if (r[0]!.status === 'fulfilled') expect(u32(r[0]!.value)[0]).toBe(9);
      else expect(r[0]!.reason).toMatchObject({ code: 'ERR_DEVEXIT_DEVICE_CLOSED' });
      expect(await failure(() => q.flush())).toMatchObject({ code: 'ERR_DEVEXIT_DEVICE_CLOSED' });
      await d[Symbol.asyncDispose](); // idempotent, as close() is
      const again = await b.open(0);
      expect(again).not.toBe(d);
      const q2 = again.queue();
      await q2[Symbol.asyncDispose]();
      expect(again.closed, "a queue's asyncDispose closes its device").toBe(true);
    });

    // Disposing the device or the queue (await using), or closing explicitly: the same ending.
    const early = [
      [
        'disposes its device (await using)',
        child('dispose', { DEVEXIT_CONFORMANCE_DISPOSE: 'device' }),
        'disposed',
      ],
      [
        'disposes its queue (await using)',
        child('dispose', { DEVEXIT_CONFORMANCE_DISPOSE: 'queue' }),
        'disposed',
      ],
      ['closes explicitly', child('explicit'), 'closed'],
    ] as const;
    for (const [what, options, said] of early) {
      it(`a child that ${what} with work queued reports no exit-time close`, async () => {
        const results = await runMany(Math.min(runs, 5), options);
        for (const r of results) {
          expect(summary(r), describeChild(r)).toEqual({
            code: 0,
            signal: null,
            timedOut: false,
            crashed: false,
            closes: { ...otherCloses },
            failed: [],
          });
          expect(r.stdout).toContain(said);
        }
      });
    }
  });

  describe(title(`exit paths with work in flight (${runs} runs each)`), () => {
    for (const spec of EXIT_ROWS) {
      it(`${spec.title}: exit ${spec.code}, no crash, no hang, queue closed once`, async () => {
        const name = (await getBackend()).name;
        const signal = 'signalOnReady' in spec ? spec.signalOnReady : undefined;
        const results = await runMany(runs, child(spec.row, {}, signal));
        for (const result of results) {
          // process.exit() in a Worker closes what its realm owns (a wgpu device is the realm's; a
          // native service is the process's): at most once, on the Worker's thread; the process's
          // exit then closes the main thread's device once.
          let r = result;
          if (spec.row === 'workerExit') {
            const inWorker = result.report.filter((e) => e.layer === 'worker-exit');
            expect(inWorker.length, describeChild(result)).toBeLessThanOrEqual(1);
            r = { ...result, report: result.report.filter((e) => e.layer !== 'worker-exit') };
          }
          expect(summary(r), describeChild(r)).toEqual({
            code: spec.code,
            signal: null,
            timedOut: false,
            crashed: false,
            closes: { [`${name}:0/queue`]: 1, ...otherCloses },
            failed: [],
          });
          expect(r.stdout, describeChild(r)).toContain(spec.stdout);
        }
      });
    }

    it(`DEVEXIT_SIGNALS=SIGTERM, SIGTERM with work queued: the read settles with its result, each service closes once (shutdown), the process ends by SIGTERM`, async () => {
      const name = (await getBackend()).name;
      const options = child('signal', { DEVEXIT_SIGNALS: 'SIGTERM', DEVEXIT_TIMEOUT_MS: '15000' }, 'SIGTERM');
      const results = await runMany(runs, options);
      // The drain was exercised: the read was still queued when the signal came (behind 2000
      // launches, or DEVEXIT_CONFORMANCE_SIGNAL_LAUNCHES). Whether it still is when the signal
      // lands is a race (a fast device finishes first): more runs until one shows it, 20 in all.
      const pending = (r: ChildResult) => r.stdout.includes('read pending');
      if (!results.some(pending))
        results.push(...(await runUntilHit(Math.max(0, 20 - runs), options, pending)));
      expect(
        results.filter(pending).length,
        `${results.length} runs: ${JSON.stringify(outcomes(results))}`,
      ).toBeGreaterThan(0);
      for (const r of results) {
        expect(summary(r, 'SIGTERM'), describeChild(r)).toEqual({
          code: null,
          signal: 'SIGTERM',
          timedOut: false,
          crashed: false,
          closes: { [`${name}:0/queue`]: 1, ...otherCloses },
          failed: [],
        });
        expect(new Set(r.report.map((e) => e.layer)), describeChild(r)).toEqual(new Set(['shutdown']));
        expect(r.stdout, describeChild(r)).toContain('read ok');
        expect(r.stdout, describeChild(r)).toContain('flush ok');
      }
    });

    it('control: the same child without DEVEXIT_SIGNALS ends by SIGTERM at once, nothing closed (the assertion above can fail)', async () => {
      const results = await runMany(Math.min(runs, 4), child('signal', {}, 'SIGTERM'));
      for (const r of results) {
        expect(summary(r, 'SIGTERM'), describeChild(r)).toMatchObject({ signal: 'SIGTERM', closes: {} });
        expect(r.stdout).not.toContain('shutdown begins');
      }
    });

    it('control: with DEVEXIT_GUARD=0 the same child reports no close (the assertion above can fail)', async () => {
      const results = await runMany(Math.min(runs, 4), child('exit', { DEVEXIT_GUARD: '0' }));
      for (const r of results) {
        expect(r.timedOut, describeChild(r)).toBe(false);
        expect(summary(r).closes, describeChild(r)).toEqual({});
      }
    });
  });
}
