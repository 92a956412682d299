import type { Device, DeviceBuffer, Kernel, Queue } from '@devexit/core';
import { expect, it } from 'vitest';

/**
 * One table of calls and what every backend must answer: accepted, or refused with the same error
 * class and `code`. Each backend runs the same table, so they accept and refuse identically.
 */

type Outcome =
  | 'accepted'
  | `TypeError ${'ERR_INVALID_ARG_TYPE' | 'ERR_INVALID_ARG_VALUE'}`
  | 'RangeError ERR_OUT_OF_RANGE'
  | 'DevexitError ERR_DEVEXIT_OUT_OF_RANGE';

const ACCEPTED: Outcome = 'accepted';
const TYPE: Outcome = 'TypeError ERR_INVALID_ARG_TYPE';
const VALUE: Outcome = 'TypeError ERR_INVALID_ARG_VALUE';
const RANGE: Outcome = 'DevexitError ERR_DEVEXIT_OUT_OF_RANGE';
/** A number outside the range its argument allows (negative, fractional, NaN, too large), as core's deviceId(). */
const NUMBER: Outcome = 'RangeError ERR_OUT_OF_RANGE';

/** What a row works with: fresh buffers of this device object, and ones it must refuse. */
interface Ctx {
  d: Device;
  q: Queue;
  fill: Kernel;
  copy: Kernel;
  saxpy: Kernel;
  sum: Kernel;
  /** 16 bytes (4 elements), and a second one. */
  b: DeviceBuffer;
  c: DeviceBuffer;
  /** 8 bytes, 0 bytes. */
  small: DeviceBuffer;
  empty: DeviceBuffer;
  /** Freed before the rows run. */
  freed: DeviceBuffer;
  /** Allocated, and its kernel made, by an earlier device object of the same index (closed). */
  foreign: DeviceBuffer;
  foreignKernel: Kernel;
  /** Freed by a row. */
  spare: DeviceBuffer;
}

interface Row {
  call: string;
  expect: Outcome;
  run(c: Ctx): unknown;
}

const bad = (v: unknown) => v as never;
const n = (v: number) => ({ u32: v });
const launchFill =
  (grid: unknown, value: unknown = n(8)) =>
  (c: Ctx) =>
    c.q.launch(c.fill, bad(grid), [c.b, bad(value), n(4)]);

/** Launch rows: each would write 8s into `b` if it ran. */
const LAUNCH_ROWS: Row[] = [
  { call: 'launch fill_u32 grid 4', expect: ACCEPTED, run: launchFill(4) },
  { call: 'grid 0 (launches nothing)', expect: ACCEPTED, run: launchFill(0) },
  { call: 'grid [4]', expect: ACCEPTED, run: launchFill([4]) },
  { call: 'grid [4, 1, 1]', expect: ACCEPTED, run: launchFill([4, 1, 1]) },
  { call: 'grid [2, 2]', expect: ACCEPTED, run: launchFill([2, 2]) },
  { call: 'grid [0, 5]', expect: ACCEPTED, run: launchFill([0, 5]) },
  { call: 'grid -1', expect: NUMBER, run: launchFill(-1) },
  { call: 'grid 1.5', expect: NUMBER, run: launchFill(1.5) },
  { call: 'grid NaN', expect: NUMBER, run: launchFill(Number.NaN) },
  { call: 'grid 2^32', expect: NUMBER, run: launchFill(2 ** 32) },
  { call: "grid '4'", expect: TYPE, run: launchFill('4') },
  { call: 'grid undefined', expect: TYPE, run: launchFill(undefined) },
  { call: 'grid []', expect: TYPE, run: launchFill([]) },
  { call: 'grid [1, 2, 3, 4]', expect: TYPE, run: launchFill([1, 2, 3, 4]) },
  { call: 'grid [2^32]', expect: TYPE, run: launchFill([2 ** 32]) },
  { call: 'grid [4, -1]', expect: TYPE, run: launchFill([4, -1]) },
  { call: 'grid [4, 1.5]', expect: TYPE, run: launchFill([4, 1.5]) },
  { call: 'scalar { u32: 0 }', expect: ACCEPTED, run: launchFill(4, n(0)) },
  { call: 'scalar { u32: 2^32 - 1 }', expect: ACCEPTED, run: launchFill(4, n(0xffffffff)) },
  { call: 'scalar { u32: -1 }', expect: NUMBER, run: launchFill(4, n(-1)) },
  { call: 'scalar { u32: 1.5 }', expect: NUMBER, run: launchFill(4, n(1.5)) },
  { call: 'scalar { u32: 2^32 }', expect: NUMBER, run: launchFill(4, n(2 ** 32)) },
  { call: 'scalar { u32: NaN }', expect: NUMBER, run: launchFill(4, n(Number.NaN)) },
  { call: "scalar { u32: '1' }", expect: TYPE, run: launchFill(4, { u32: '1' }) },
  { call: 'scalar with two keys { u32, i32 }', expect: TYPE, run: launchFill(4, { u32: 1, i32: 1 }) },
  { call: 'scalar with an extra key { u32, x }', expect: TYPE, run: launchFill(4, { u32: 1, x: 1 }) },
  { call: 'scalar {}', expect: TYPE, run: launchFill(4, {}) },
  { call: 'scalar null', expect: TYPE, run: launchFill(4, null) },
  { call: 'scalar 8 (untagged)', expect: TYPE, run: launchFill(4, 8) },
  { call: 'scalar { i32: 2^31 } (out of i32 range)', expect: NUMBER, run: launchFill(4, { i32: 2 ** 31 }) },
  { call: 'scalar { i32: 8 } for u32 value', expect: TYPE, run: launchFill(4, { i32: 8 }) },
  { call: 'scalar { f32: 8 } for u32 value', expect: TYPE, run: launchFill(4, { f32: 8 }) },
  { call: 'buffer for u32 value', expect: TYPE, run: (c) => c.q.launch(c.fill, 4, [c.b, c.c, n(4)]) },
  { call: 'scalar for buffer out', expect: TYPE, run: (c) => c.q.launch(c.fill, 4, [bad(n(1)), n(8), n(4)]) },
  { call: 'buffer for u32 n', expect: TYPE, run: (c) => c.q.launch(c.fill, 4, [c.b, n(8), c.c]) },
  { call: 'fill_u32 with 2 arguments', expect: VALUE, run: (c) => c.q.launch(c.fill, 4, [c.b, n(8)]) },
  {
    call: 'fill_u32 with 4 arguments',
    expect: VALUE,
    run: (c) => c.q.launch(c.fill, 4, [c.b, n(8), n(4), n(4)]),
  },
  { call: 'args not an array', expect: TYPE, run: (c) => c.q.launch(c.fill, 4, bad({ 0: c.b })) },
  {
    call: 'saxpy_f32 a { f32: 1.5 }',
    expect: ACCEPTED,
    run: (c) => c.q.launch(c.saxpy, 4, [c.c, c.b, { f32: 1.5 }, n(4)]),
  },
  {
    call: 'saxpy_f32 a { f32: Infinity }',
    expect: ACCEPTED,
    run: (c) => c.q.launch(c.saxpy, 4, [c.c, c.b, { f32: Infinity }, n(4)]),
  },
  {
    call: "saxpy_f32 a { f32: '1' }",
    expect: TYPE,
    run: (c) => c.q.launch(c.saxpy, 4, [c.c, c.b, { f32: bad('1') }, n(4)]),
  },
  {
    call: 'saxpy_f32 a { u32: 2 }',
    expect: TYPE,
    run: (c) => c.q.launch(c.saxpy, 4, [c.c, c.b, bad(n(2)), n(4)]),
  },
  {
    call: 'saxpy_f32 a { i32: 2 }',
    expect: TYPE,
    run: (c) => c.q.launch(c.saxpy, 4, [c.c, c.b, bad({ i32: 2 }), n(4)]),
  },
  {
    call: 'fill_u32 n = 5 on a 4-element buffer',
    expect: RANGE,
    run: (c) => c.q.launch(c.fill, 4, [c.b, n(8), n(5)]),
  },
  {
    call: 'copy n = 4 into an 8-byte dst',
    expect: RANGE,
    run: (c) => c.q.launch(c.copy, 4, [c.c, c.small, n(4)]),
  },
  {
    call: 'copy n = 4 from an 8-byte src',
    expect: RANGE,
    run: (c) => c.q.launch(c.copy, 4, [c.small, c.b, n(4)]),
  },
  {
    call: 'saxpy_f32 n = 5',
    expect: RANGE,
    run: (c) => c.q.launch(c.saxpy, 4, [c.c, c.b, { f32: 1 }, n(5)]),
  },
  {
    call: 'sum_f32 into a 0-byte out',
    expect: RANGE,
    run: (c) => c.q.launch(c.sum, 4, [c.c, c.empty, n(4)]),
  },
  {
    call: 'sum_f32 n = 4, out 8 bytes',
    expect: ACCEPTED,
    run: (c) => c.q.launch(c.sum, 4, [c.c, c.small, n(4)]),
  },
  {
    call: 'fill_u32 n = 0 on a 0-byte buffer',
    expect: ACCEPTED,
    run: (c) => c.q.launch(c.fill, 1, [c.empty, n(8), n(0)]),
  },
  { call: 'copy with src = dst', expect: ACCEPTED, run: (c) => c.q.launch(c.copy, 4, [c.c, c.c, n(4)]) },
  {
    call: 'saxpy_f32 with x = y',
    expect: ACCEPTED,
    run: (c) => c.q.launch(c.saxpy, 4, [c.c, c.c, { f32: 1 }, n(4)]),
  },
  { call: 'a freed buffer', expect: VALUE, run: (c) => c.q.launch(c.fill, 4, [c.freed, n(8), n(4)]) },
  {
    call: 'a buffer of another device object',
    expect: TYPE,
    run: (c) => c.q.launch(c.fill, 4, [c.foreign, n(8), n(4)]),
  },
  {
    call: 'a kernel of another device object',
    expect: TYPE,
    run: (c) => c.q.launch(c.foreignKernel, 4, [c.b, n(8), n(4)]),
  },
  {
    call: 'a kernel not from kernel()/loadKernel()',
    expect: TYPE,
    run: (c) => c.q.launch(bad({ name: 'fill_u32' }), 4, [c.b, n(8), n(4)]),
  },
];

const OTHER_ROWS: Row[] = [
  { call: "kernel('nope')", expect: VALUE, run: (c) => c.d.kernel(bad('nope')) },
  { call: 'kernel(1)', expect: TYPE, run: (c) => c.d.kernel(bad(1)) },
  { call: 'alloc(0)', expect: ACCEPTED, run: (c) => c.q.alloc(0) },
  { call: 'alloc(16)', expect: ACCEPTED, run: (c) => c.q.alloc(16) },
  { call: 'alloc(-1)', expect: NUMBER, run: (c) => c.q.alloc(-1) },
  { call: 'alloc(1.5)', expect: NUMBER, run: (c) => c.q.alloc(1.5) },
  { call: 'alloc(NaN)', expect: NUMBER, run: (c) => c.q.alloc(Number.NaN) },
  { call: 'alloc(2^53)', expect: NUMBER, run: (c) => c.q.alloc(2 ** 53) },
  { call: "alloc('16')", expect: TYPE, run: (c) => c.q.alloc(bad('16')) },
  { call: 'fill(b, 7)', expect: ACCEPTED, run: (c) => c.q.fill(c.b, 7) },
  { call: 'fill(b, 2^32 - 1, 4, 8)', expect: ACCEPTED, run: (c) => c.q.fill(c.b, 0xffffffff, 4, 8) },
  { call: 'fill(b, 1, 16) (nothing at the end)', expect: ACCEPTED, run: (c) => c.q.fill(c.b, 1, 16) },
  { call: 'fill(b, -1)', expect: NUMBER, run: (c) => c.q.fill(c.b, -1) },
  { call: 'fill(b, 2^32)', expect: NUMBER, run: (c) => c.q.fill(c.b, 2 ** 32) },
  { call: 'fill(b, 1.5)', expect: NUMBER, run: (c) => c.q.fill(c.b, 1.5) },
  { call: "fill(b, '1')", expect: TYPE, run: (c) => c.q.fill(c.b, bad('1')) },
  { call: 'fill(b, 1, 2) (offset not a multiple of 4)', expect: VALUE, run: (c) => c.q.fill(c.b, 1, 2) },
  { call: 'fill(b, 1, 0, 6) (bytes not a multiple of 4)', expect: VALUE, run: (c) => c.q.fill(c.b, 1, 0, 6) },
  { call: 'fill(b, 1, -4)', expect: NUMBER, run: (c) => c.q.fill(c.b, 1, -4) },
  { call: 'fill(b, 1, 0, 20) (past the end)', expect: RANGE, run: (c) => c.q.fill(c.b, 1, 0, 20) },
  { call: 'fill(b, 1, 20) (offset past the end)', expect: RANGE, run: (c) => c.q.fill(c.b, 1, 20) },
  { call: 'fill(freed, 1)', expect: VALUE, run: (c) => c.q.fill(c.freed, 1) },
  { call: 'fill(foreign, 1)', expect: TYPE, run: (c) => c.q.fill(c.foreign, 1) },
  { call: 'copy(b, c)', expect: ACCEPTED, run: (c) => c.q.copy(c.b, c.c) },
  { call: 'copy(b, small) (what fits in both)', expect: ACCEPTED, run: (c) => c.q.copy(c.b, c.small) },
  { call: 'copy(b, c, 8, 4, 8)', expect: ACCEPTED, run: (c) => c.q.copy(c.b, c.c, 8, 4, 8) },
  { call: 'copy(b, b, 8, 0, 4) (overlapping)', expect: ACCEPTED, run: (c) => c.q.copy(c.b, c.b, 8, 0, 4) },
  { call: 'copy(b, c, 3, 1, 2) (unaligned)', expect: ACCEPTED, run: (c) => c.q.copy(c.b, c.c, 3, 1, 2) },
  { call: 'copy(b, c, 20)', expect: RANGE, run: (c) => c.q.copy(c.b, c.c, 20) },
  { call: 'copy(b, c, 4, 14)', expect: RANGE, run: (c) => c.q.copy(c.b, c.c, 4, 14) },
  { call: 'copy(b, c, 4, 0, 13)', expect: RANGE, run: (c) => c.q.copy(c.b, c.c, 4, 0, 13) },
  { call: 'copy(b, c, -1)', expect: NUMBER, run: (c) => c.q.copy(c.b, c.c, -1) },
  { call: 'copy(b, c, 1.5)', expect: NUMBER, run: (c) => c.q.copy(c.b, c.c, 1.5) },
  { call: 'copy(freed, c)', expect: VALUE, run: (c) => c.q.copy(c.freed, c.c) },
  { call: 'copy(b, foreign)', expect: TYPE, run: (c) => c.q.copy(c.b, c.foreign) },
  { call: 'write(b, 4 bytes, 12)', expect: ACCEPTED, run: (c) => c.q.write(c.b, new Uint8Array(4), 12) },
  { call: 'write(b, 4 bytes, 13)', expect: RANGE, run: (c) => c.q.write(c.b, new Uint8Array(4), 13) },
  { call: 'write(b, 1 byte, 1.5)', expect: NUMBER, run: (c) => c.q.write(c.b, new Uint8Array(1), 1.5) },
  { call: "write(b, 'x')", expect: TYPE, run: (c) => c.q.write(c.b, bad('x')) },
  { call: 'write(freed, 4 bytes)', expect: VALUE, run: (c) => c.q.write(c.freed, new Uint8Array(4)) },
  { call: 'write(foreign, 4 bytes)', expect: TYPE, run: (c) => c.q.write(c.foreign, new Uint8Array(4)) },
  { call: 'read(b, 4, 4)', expect: ACCEPTED, run: (c) => c.q.read(c.b, 4, 4) },
  { call: 'read(b, 0, 17)', expect: RANGE, run: (c) => c.q.read(c.b, 0, 17) },
  { call: 'read(b, 1.5)', expect: NUMBER, run: (c) => c.q.read(c.b, 1.5) },
  { call: 'read(freed)', expect: VALUE, run: (c) => c.q.read(c.freed) },
  { call: 'read(foreign)', expect: TYPE, run: (c) => c.q.read(c.foreign) },
  { call: 'free(spare)', expect: ACCEPTED, run: (c) => c.q.free(c.spare) },
  { call: 'free(freed) (twice)', expect: VALUE, run: (c) => c.q.free(c.freed) },
  { call: 'free(foreign)', expect: TYPE, run: (c) => c.q.free(c.foreign) },
];

function describeOutcome(err: unknown): string {
  if (err === undefined) return ACCEPTED;
  const e = err as { name?: unknown; code?: unknown };
  const cls = err instanceof TypeError ? 'TypeError' : String(e.name);
  return `${cls} ${String(e.code)}`;
}

/**
 * Runs a call now and gives its outcome: thrown, or (for read/flush) rejected. A returned promise
 * gets its handler at once, so a rejection is never unhandled while other calls run.
 */
function attempt(run: () => unknown): Promise<string> {
  try {
    const value = run();
    if (value instanceof Promise) {
      return value.then(
        () => ACCEPTED,
        (e: unknown) => describeOutcome(e ?? new Error('rejected without a reason')),
      );
    }
    return Promise.resolve(ACCEPTED);
  } catch (thrown) {
    return Promise.resolve(describeOutcome(thrown));
  }
}

const u32 = (bytes: Uint8Array) => Array.from(new Uint32Array(bytes.slice().buffer));

/**
 * Declares the rows: `open` gives this realm's device object of index 0 (a fresh one once the
 * previous closed). The device is closed once, to make a buffer and kernel of another object.
 */
export function defineArgumentRules(open: () => Promise<Device>): void {
  const setup = async (): Promise<Ctx> => {
    const old = await open();
    const foreign = old.queue().alloc(16);
    const foreignKernel = old.kernel('fill_u32');
    await old.close();
    const d = await open();
    const q = d.queue();
    const freed = q.alloc(16);
    q.free(freed);
    const c: Ctx = {
      d,
      q,
      fill: d.kernel('fill_u32'),
      copy: d.kernel('copy'),
      saxpy: d.kernel('saxpy_f32'),
      sum: d.kernel('sum_f32'),
      b: q.alloc(16),
      c: q.alloc(16),
      small: q.alloc(8),
      empty: q.alloc(0),
      freed,
      foreign,
      foreignKernel,
      spare: q.alloc(16),
    };
    q.write(c.c, new Float32Array([1, 2, 3, 4]));
    return c;
  };

  it('every backend accepts or refuses the same calls, with the same error class and code; a refused call leaves the valid launch before it intact', async () => {
    const c = await setup();
    const rows = [...LAUNCH_ROWS, ...OTHER_ROWS];
    const witnesses = rows.map(() => c.q.alloc(4));
    // One synchronous run: every call lands in the same batch as the valid launches around it.
    const results = rows.map((row, i) => {
      c.q.launch(c.fill, 1, [witnesses[i] as DeviceBuffer, n(i + 1), n(1)]);
      return attempt(() => row.run(c));
    });
    const got = (await Promise.all(results)).map((o, i) => `${rows[i]?.call}: ${o}`);
    expect(got).toEqual(rows.map((r) => `${r.call}: ${r.expect}`));
    const seen = await Promise.all(witnesses.map(async (w) => u32(await c.q.read(w))[0]));
    expect(seen, 'each valid launch before a call').toEqual(rows.map((_, i) => i + 1));
  });

  it('a refused launch right after a valid launch into the same buffer: the valid result is read back intact', async () => {
    const c = await setup();
    for (const row of LAUNCH_ROWS.filter((r) => r.expect !== ACCEPTED)) {
      c.q.launch(c.fill, 4, [c.b, n(0xc0ffee), n(4)]);
      expect(await attempt(() => row.run(c)), row.call).toBe(row.expect);
      expect(u32(await c.q.read(c.b)), row.call).toEqual([0xc0ffee, 0xc0ffee, 0xc0ffee, 0xc0ffee]);
    }
  });

  it('accepted launches compute what they say: grid 0 launches nothing, copy(c, c) and saxpy with x = y', async () => {
    const c = await setup();
    c.q.fill(c.b, 5);
    c.q.launch(c.fill, 0, [c.b, n(8), n(4)]);
    c.q.launch(c.fill, [4, 0], [c.b, n(8), n(4)]);
    expect(u32(await c.q.read(c.b))).toEqual([5, 5, 5, 5]);
    c.q.launch(c.copy, 4, [c.c, c.c, n(4)]);
    c.q.launch(c.saxpy, 4, [c.c, c.c, { f32: 2 }, n(4)]);
    expect(Array.from(new Float32Array((await c.q.read(c.c)).slice().buffer))).toEqual([3, 6, 9, 12]);
  });
}
