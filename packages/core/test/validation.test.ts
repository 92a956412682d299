import { describe, expect, it } from 'vitest';
import {
  BUILTIN_DEVICE_TYPES,
  checkInteger,
  checkPath,
  closeAtExit,
  closeServices,
  configure,
  currentConfig,
  DevexitRangeError,
  DevexitTypeError,
  describeValue,
  deviceId,
  deviceType,
  envChoice,
  formatDeviceId,
  isExiting,
} from '../src/index.js';

function thrown(fn: () => unknown): Error & { code?: string } {
  try {
    fn();
  } catch (err) {
    return err as Error & { code?: string };
  }
  throw new Error('did not throw');
}

// Runs in its own fork (vitest forks pool), without @devexit/native.
describe('bad input changes no state', () => {
  it('closeServices({ final: 1 }): a typed error, nothing closed, nothing refused', () => {
    let closed = 0;
    closeAtExit(deviceId('cpu', 3), 'queue', () => closed++);
    const err = thrown(() => closeServices({ final: 1 as never }));
    expect(err).toBeInstanceOf(DevexitTypeError);
    expect(err).toBeInstanceOf(TypeError);
    expect(err.code).toBe('ERR_INVALID_ARG_TYPE');
    expect(err.message).toBe('devexit: final must be a boolean; got 1');
    expect(thrown(() => closeServices({ finale: true } as never)).code).toBe('ERR_INVALID_ARG_VALUE');
    expect(thrown(() => closeServices(null as never)).code).toBe('ERR_INVALID_ARG_TYPE');
    expect(closed).toBe(0);
    expect(isExiting()).toBe(false);
    // Still accepting registrations, and the first one is still there.
    expect(closeAtExit(deviceId('cpu', 4), 'queue', () => {})).toBe(true);
    expect(closeAtExit(deviceId('cpu', 3), 'queue', () => {})).toBe(false);
  });

  it('configure: typed errors, nothing applied from a half-bad object', () => {
    const before = currentConfig();
    expect(thrown(() => configure({ timeoutMs: 500, onTimeout: 'later' as never })).code).toBe(
      'ERR_INVALID_ARG_VALUE',
    );
    expect(thrown(() => configure({ timeoutMs: '500' as never })).code).toBe('ERR_INVALID_ARG_TYPE');
    const range = thrown(() => configure({ timeoutMs: 1e13 }));
    expect(range).toBeInstanceOf(DevexitRangeError);
    expect(range).toBeInstanceOf(RangeError);
    expect(range.code).toBe('ERR_OUT_OF_RANGE');
    expect(range.message).toBe('devexit: timeoutMs must be an integer in 1..2147483647; got 10000000000000');
    expect(thrown(() => configure({ timeout: 5 } as never)).message).toBe(
      'devexit: configure() options has an unknown option "timeout"; it takes timeoutMs, onTimeout, signals, logger, workers',
    );
    expect(thrown(() => configure(undefined as never)).code).toBe('ERR_INVALID_ARG_TYPE');
    expect(currentConfig()).toEqual(before);
  });

  it('device ids: ERR_INVALID_ARG_TYPE for the kind, ERR_OUT_OF_RANGE for the number', () => {
    expect(thrown(() => deviceId('cpu', '0' as never)).code).toBe('ERR_INVALID_ARG_TYPE');
    expect(thrown(() => deviceId('cpu', -1)).code).toBe('ERR_OUT_OF_RANGE');
    expect(thrown(() => deviceId('cpu', 1.5)).code).toBe('ERR_OUT_OF_RANGE');
    expect(thrown(() => deviceId('', 0)).code).toBe('ERR_INVALID_ARG_VALUE');
    expect(thrown(() => deviceType(42 as never)).code).toBe('ERR_INVALID_ARG_TYPE');
  });

  it('values in messages are cut to about 80 characters', () => {
    const huge = 'x'.repeat(16 * 1024 * 1024);
    const err = thrown(() => deviceType(huge));
    expect(err.message.length).toBeLessThan(250);
    expect(err.message).toMatch(/got "x{70,}.*\(16777216 characters\)$/);
    expect(describeValue(10n ** 200n).length).toBeLessThanOrEqual(80);
    expect(describeValue(Symbol('s'.repeat(500))).length).toBeLessThanOrEqual(80);
    expect(describeValue('\n'.repeat(200)).length).toBeLessThan(120);
    expect(describeValue({ secret: 'not shown' })).toBe('an object');
  });

  it('name tables have no prototype keys', () => {
    for (const name of ['constructor', 'toString', 'valueOf', 'hasOwnProperty']) {
      expect(typeof deviceType(name), name).toBe('number');
      expect(deviceType(name)).toBeGreaterThanOrEqual(16);
    }
    expect(Object.getPrototypeOf(BUILTIN_DEVICE_TYPES)).toBe(null);
  });

  it('a name must start with a letter or digit, and the message says so', () => {
    for (const name of ['__proto__', '_x', '.a', ':a', '-a']) {
      const err = thrown(() => deviceType(name));
      expect(err.code, name).toBe('ERR_INVALID_ARG_VALUE');
      expect(err.message, name).toContain('starting with a letter or digit');
    }
    expect(typeof deviceType('a_.:-b')).toBe('number');
  });
});

// Issue 18: one validator. formatDeviceId(NaN) printed "typeundefined:undefined" and paths with a
// NUL reached C, which stops at the NUL (loadKernel('/tmp/a\0b') opened /tmp/a). Both failed before.
describe('one validator for every entry point', () => {
  it('formatDeviceId refuses what is not a DeviceId', () => {
    expect(formatDeviceId(deviceId('cpu', 2))).toBe('cpu:2');
    expect(thrown(() => formatDeviceId(Number.NaN as never)).code).toBe('ERR_INVALID_ARG_TYPE');
    expect(thrown(() => formatDeviceId({ type: 1, index: -1 })).code).toBe('ERR_OUT_OF_RANGE');
  });

  it('checkPath: a non-empty string without NUL', () => {
    expect(checkPath('/tmp/k.so', 'path')).toBe('/tmp/k.so');
    expect(thrown(() => checkPath('/tmp/a\0b', 'path'))).toMatchObject({
      code: 'ERR_INVALID_ARG_VALUE',
      message: expect.stringContaining('without NUL'),
    });
    expect(thrown(() => checkPath('', 'path')).code).toBe('ERR_INVALID_ARG_VALUE');
    expect(thrown(() => checkPath(7, 'path')).code).toBe('ERR_INVALID_ARG_TYPE');
    expect(thrown(() => checkPath(`/${'x'.repeat(5000)}\0`, 'path')).message.length).toBeLessThan(300);
  });

  it('checkInteger: ERR_OUT_OF_RANGE for any number outside, as Node', () => {
    expect(checkInteger(3, 'n', 0, 4)).toBe(3);
    for (const v of [-1, 1.5, Number.NaN, 5])
      expect(thrown(() => checkInteger(v, 'n', 0, 4)).code).toBe('ERR_OUT_OF_RANGE');
    expect(thrown(() => checkInteger('1', 'n', 0, 4)).code).toBe('ERR_INVALID_ARG_TYPE');
  });

  it('envChoice: trimmed, any case, a warning naming the variable, the default kept', async () => {
    const warnings: string[] = [];
    const listener = (w: Error) => warnings.push(w.message);
    process.on('warning', listener);
    try {
      expect(envChoice('DEVEXIT_TEST_CHOICE', ['a', 'b'] as const, 'a', { DEVEXIT_TEST_CHOICE: ' B ' })).toBe(
        'b',
      );
      expect(envChoice('DEVEXIT_TEST_CHOICE', ['a', 'b'] as const, 'a', {})).toBe('a');
      expect(envChoice('DEVEXIT_TEST_CHOICE', ['a', 'b'] as const, 'a', { DEVEXIT_TEST_CHOICE: 'zz' })).toBe(
        'a',
      );
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings).toContain('devexit: ignoring DEVEXIT_TEST_CHOICE="zz": expected one of a, b');
    } finally {
      process.off('warning', listener);
    }
  });
});
