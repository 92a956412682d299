import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import {
  closeAtExit,
  closeServices,
  configure,
  currentConfig,
  deviceId,
  deviceType,
  getCloseReport,
  isExiting,
} from '@devexit/core';
import { describe, expect, it } from 'vitest';
import { abiVersion, guardState, include, native } from '../src/index.js';

describe('@devexit/native in-process', () => {
  it('arms the main-thread guard from .init_array when loaded on the main thread', () => {
    const s = guardState();
    expect(s.owner).toBe(true);
    expect(s.platform).toBe('glibc');
    expect(s.available).toEqual({ tls: true, exitStatus: true });
    expect(s.layers).toEqual({ js: true, tls: true, atexit: true });
    expect(s.tls).toEqual({ armed: true, by: 'init_array' });
    expect(s.atexitHooks).toEqual(['load']);
    expect(abiVersion).toBe(1);
    expect(s.hostAbi).toBe(4);
    expect(native.hostAbiVersion).toBe(4);
  });

  it('exposes the exiting flag as a typed-array view (no call needed)', () => {
    const buffer = native.exitingFlagBuffer();
    expect(buffer).toBeInstanceOf(ArrayBuffer);
    const view = new Uint32Array(buffer as ArrayBuffer);
    expect(Atomics.load(view, 0)).toBe(0);
    expect(isExiting()).toBe(false);
  });

  it('device types are process-wide and distinct per backend name', () => {
    expect(deviceType('cuda')).toBe(2);
    expect(deviceType('hip')).toBe(3);
    const a = deviceType('vendor-x');
    expect(a).toBeGreaterThanOrEqual(16);
    expect(native.deviceType('vendor-x')).toBe(a);
    expect(deviceType('vendor-y')).not.toBe(a);
    expect(deviceId('cuda', 0)).not.toEqual(deviceId('hip', 0));
    expect(deviceType('constructor')).toBe(native.deviceType('constructor'));
  });

  it('ships its header directory', () => {
    expect(include).toMatch(/packages\/native\/include$/);
    // The subpath's file (resolving it by name: subpaths.test.ts; the package has no exports map,
    // so it cannot name itself from here).
    expect(require('../include')).toBe(include);
  });

  it('closeServices({ final: 1 }) changes nothing, native or JS', () => {
    closeAtExit(deviceId('wgpu', 3), 'queue', () => {});
    expect(() => closeServices({ final: 1 as never })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }),
    );
    expect(isExiting()).toBe(false);
    expect(native.isExiting()).toBe(false);
    expect(getCloseReport()).toEqual([]);
    expect(closeAtExit(deviceId('wgpu', 4), 'queue', () => {})).toBe(true);
  });

  it('the settings in force are the registry’s, and name where they came from', () => {
    // The environment's (defaults here) were pushed when this package loaded.
    expect(guardState()).toMatchObject({
      timeoutMs: 3000,
      onTimeout: 'exit',
      report: 'off',
      sources: { timeoutMs: 'the default', onTimeout: 'the default' },
    });
    configure({ timeoutMs: 1500, onTimeout: 'warn' });
    expect(guardState()).toMatchObject({
      timeoutMs: 1500,
      onTimeout: 'warn',
      sources: { timeoutMs: 'configure({ timeoutMs: 1500 })', onTimeout: "configure({ onTimeout: 'warn' })" },
    });
    expect(currentConfig()).toEqual({ timeoutMs: 1500, onTimeout: 'warn', signals: [], workers: 'off' });
  });

  it('a Worker loading the package later does not undo configure() with its environment', async () => {
    await new Promise((resolve, reject) => {
      // The package by its directory: without an exports map it cannot name itself from here.
      const w = new Worker(`require(${JSON.stringify(join(__dirname, '..'))})`, {
        eval: true,
        env: { ...process.env, DEVEXIT_TIMEOUT_MS: '99', DEVEXIT_ON_TIMEOUT: 'exit' },
      });
      w.on('exit', resolve);
      w.on('error', reject);
    });
    expect(currentConfig()).toEqual({ timeoutMs: 1500, onTimeout: 'warn', signals: [], workers: 'off' });
  });

  it('the registry clamps what it is given (a copy of another version may push anything)', () => {
    expect(native.applySettings({ origin: 'api', timeoutMs: 1e13 })).toBe(0);
    expect(guardState().timeoutMs).toBe(2147483647);
    expect(native.applySettings({ origin: 'api', onTimeout: 7 })).toBe(-2);
    expect(native.applySettings({ origin: 'api', layers: 8 })).toBe(-2);
    configure({ timeoutMs: 3000, onTimeout: 'exit' });
  });
});
