import { describe, expect, it } from 'vitest';
import {
  BUILTIN_DEVICE_TYPES,
  closeAtExit,
  closeServices,
  configure,
  currentConfig,
  DevexitRangeError,
  DevexitTypeError,
  describeValue,
  deviceId,
  deviceType,
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
});
