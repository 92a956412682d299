import { BUILTIN_KERNEL_SIGNATURES } from '@devexit/core';
import { describe, expect, it } from 'vitest';
import { checkGrid, checkLaunchArgs, checkOptions, checkScalar, checkSize, checkU32 } from '../src/checks.js';

const code = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return {
      name: (err as Error).name,
      code: (err as { code?: string }).code,
      message: (err as Error).message,
    };
  }
  return 'accepted';
};

describe('the one validator', () => {
  it('options: undefined or an object of the keys the call takes; another key is refused by name', () => {
    type O = { signal?: AbortSignal; name?: string };
    expect(checkOptions<O>(undefined, ['signal', 'name'])).toEqual({});
    const o = { name: 'x' };
    expect(checkOptions<O>(o, ['signal', 'name'])).toBe(o);
    expect(code(() => checkOptions<O>({ sigal: 1 }, ['signal', 'name'], 'read() options'))).toEqual({
      name: 'TypeError',
      code: 'ERR_INVALID_ARG_VALUE',
      message: 'devexit: read() options has an unknown option "sigal"; it takes signal, name',
    });
    for (const bad of [null, 'signal', 7, [], () => {}]) {
      expect(code(() => checkOptions<O>(bad, ['signal'], 'flush() options'))).toMatchObject({
        name: 'TypeError',
        code: 'ERR_INVALID_ARG_TYPE',
        message: expect.stringContaining('flush() options'),
      });
    }
  });

  it('grids: a count or [x, y?, z?], integers in 0..2^32-1', () => {
    expect(checkGrid(0)).toEqual([0, 1, 1]);
    expect(checkGrid(7)).toEqual([7, 1, 1]);
    expect(checkGrid([2, 3])).toEqual([2, 3, 1]);
    expect(checkGrid([2, undefined, 4])).toEqual([2, 1, 4]);
    expect(checkGrid(2 ** 32 - 1)).toEqual([2 ** 32 - 1, 1, 1]);
    for (const bad of [-1, 1.5, 2 ** 32, Number.NaN]) {
      expect(
        code(() => checkGrid(bad)),
        String(bad),
      ).toMatchObject({
        name: 'RangeError',
        code: 'ERR_OUT_OF_RANGE',
        message: expect.stringContaining('grid'),
      });
    }
    for (const bad of ['4', [], [1, 2, 3, 4], [undefined], [1, -1], null]) {
      expect(
        code(() => checkGrid(bad)),
        String(bad),
      ).toMatchObject({ name: 'TypeError', message: expect.stringContaining('grid') });
    }
  });

  it('scalars: exactly one of u32 / i32 / f32 with a value in range', () => {
    expect(checkScalar({ u32: 0 }, 'a')).toEqual({ kind: 'u32', value: 0 });
    expect(checkScalar({ u32: 2 ** 32 - 1 }, 'a')).toEqual({ kind: 'u32', value: 2 ** 32 - 1 });
    expect(checkScalar({ i32: -(2 ** 31) }, 'a')).toEqual({ kind: 'i32', value: -(2 ** 31) });
    expect(checkScalar({ f32: Number.NaN }, 'a').kind).toBe('f32');
    // Issue 18: { u32: -1 } was refused as "got an object"; the message now says what is wrong.
    // Failed before (TypeError ERR_INVALID_ARG_VALUE "args[1] must be ...; got an object").
    for (const [bad, message] of [
      [{ u32: -1 }, 'devexit: args[1].u32 must be an integer in 0..4294967295; got -1'],
      [{ u32: 1.5 }, 'devexit: args[1].u32 must be an integer in 0..4294967295; got 1.5'],
      [{ u32: 2 ** 32 }, 'devexit: args[1].u32 must be an integer in 0..4294967295; got 4294967296'],
      [
        { i32: 2 ** 31 },
        'devexit: args[1].i32 must be an integer in -2147483648..2147483647; got 2147483648',
      ],
    ] as const) {
      expect(
        code(() => checkScalar(bad, 'args[1]')),
        JSON.stringify(bad),
      ).toEqual({
        name: 'RangeError',
        code: 'ERR_OUT_OF_RANGE',
        message,
      });
    }
    expect(code(() => checkScalar({ u32: '1' }, 'args[1]'))).toMatchObject({
      code: 'ERR_INVALID_ARG_TYPE',
      message: expect.stringContaining('args[1].u32 must be an integer'),
    });
    const refused = [{ f32: '1' }, { u32: 1, i32: 1 }, {}, { u64: 1 }, null, [1], 5];
    for (const bad of refused) {
      expect(
        code(() => checkScalar(bad, 'args[1]')),
        JSON.stringify(bad),
      ).toMatchObject({
        name: 'TypeError',
        code: expect.stringMatching(/^ERR_INVALID_ARG_(TYPE|VALUE)$/),
        message: expect.stringContaining('args[1]'),
      });
    }
  });

  it('sizes and u32 values', () => {
    expect(checkSize(0, 'bytes')).toBe(0);
    // One code per mistake: a number out of its range is ERR_OUT_OF_RANGE here as in core.
    expect(code(() => checkSize(-1, 'bytes'))).toMatchObject({
      name: 'RangeError',
      code: 'ERR_OUT_OF_RANGE',
    });
    expect(code(() => checkSize('1', 'bytes'))).toMatchObject({ code: 'ERR_INVALID_ARG_TYPE' });
    expect(checkU32(2 ** 32 - 1, 'value')).toBe(2 ** 32 - 1);
    expect(code(() => checkU32(-1, 'value'))).toMatchObject({ code: 'ERR_OUT_OF_RANGE' });
  });

  it('launch args against a built-in signature: kinds, count, and n that fits the buffers', () => {
    const sig = BUILTIN_KERNEL_SIGNATURES.saxpy_f32;
    const buffers = new Map([
      ['x', 64],
      ['y', 64],
      ['small', 8],
    ]);
    const check = (args: unknown) =>
      code(() =>
        checkLaunchArgs(args, {
          kernelName: 'saxpy_f32',
          signature: sig,
          buffer: (v) =>
            typeof v === 'string' && buffers.has(v) ? { buffer: v, size: buffers.get(v)! } : undefined,
        }),
      );
    expect(check(['x', 'y', { f32: 2 }, { u32: 16 }])).toBe('accepted');
    expect(check(['x', 'y', { f32: 2 }, { u32: 17 }])).toMatchObject({ code: 'ERR_DEVEXIT_OUT_OF_RANGE' });
    expect(check(['x', 'small', { f32: 2 }, { u32: 16 }])).toMatchObject({
      code: 'ERR_DEVEXIT_OUT_OF_RANGE',
    });
    expect(check(['x', 'y', { u32: 2 }, { u32: 16 }])).toMatchObject({
      name: 'TypeError',
      code: 'ERR_INVALID_ARG_TYPE',
    });
    expect(check(['x', 'y', { f32: 2 }])).toMatchObject({
      name: 'TypeError',
      message: expect.stringContaining('4 arguments'),
    });
    expect(check('x')).toMatchObject({ name: 'TypeError', message: expect.stringContaining('args') });
    // sum_f32's out holds one element, whatever n says.
    const sum = (args: unknown[]) =>
      code(() =>
        checkLaunchArgs(args, {
          kernelName: 'sum_f32',
          signature: BUILTIN_KERNEL_SIGNATURES.sum_f32,
          buffer: (v) =>
            typeof v === 'string' && buffers.has(v) ? { buffer: v, size: buffers.get(v)! } : undefined,
        }),
      );
    expect(sum(['x', 'small', { u32: 16 }])).toBe('accepted');
  });

  it('long offending values are cut in messages', () => {
    const err = code(() => checkSize('x'.repeat(1 << 20), 'bytes')) as { message: string };
    expect(err.message.length).toBeLessThan(400);
  });
});
