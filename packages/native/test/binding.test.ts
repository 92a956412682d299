import { closeAtExit, deviceId, deviceType, getCloseReport, isExiting } from '@devexit/core';
import { describe, expect, it } from 'vitest';
import { abiVersion, guardState, include, native } from '../src/index.js';

describe('@devexit/native in-process', () => {
  it('arms the main-thread guard from .init_array when loaded on the main thread', () => {
    const s = guardState();
    expect(s.owner).toBe(true);
    expect(s.layers).toEqual({ js: true, tls: true, atexit: true });
    expect(s.tls).toEqual({ armed: true, by: 'init_array' });
    expect(s.atexitHooks).toEqual(['load']);
    expect(abiVersion).toBe(1);
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
  });

  it('ships its header directory', () => {
    expect(include).toMatch(/packages\/native\/include$/);
    expect(require('@devexit/native/include')).toBe(include);
  });

  it('JS closes and native closes share one report', () => {
    closeAtExit(deviceId('wgpu', 3), 'queue', () => {});
    expect(getCloseReport()).toEqual([]);
  });
});
