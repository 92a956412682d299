import { describe, expect, it } from 'vitest';
import {
  closeAtExit,
  closeServices,
  configure,
  currentConfig,
  deviceId,
  deviceType,
  installNativeBridge,
  isExiting,
  type Settings,
} from '../src/index.js';
import type { NativeBridge, SettingsUpdate } from '../src/state.js';

// A fake bridge: what core does with @devexit/native, without the addon.
describe('the native bridge', () => {
  it('pushes the settings, reads the flag with a call where external buffers are refused, delegates types', () => {
    let flag = false;
    const calls: string[] = [];
    const pushed: SettingsUpdate[] = [];
    let inForce: Omit<Settings, 'signals' | 'workers'> = {
      timeoutMs: 1234,
      onTimeout: 'warn',
      layers: { js: true, tls: true, atexit: true },
      report: 'off',
      sources: { timeoutMs: 'another copy', onTimeout: 'another copy' },
    };
    const bridge: NativeBridge = {
      deviceType: (name) => (name === 'late-vendor' ? 300 : 301),
      isExiting: () => {
        calls.push('isExiting');
        return flag;
      },
      exitingView: undefined,
      closeAll: (layer, mark) => {
        calls.push(`closeAll ${layer} ${mark}`);
        flag = flag || mark;
        return 0;
      },
      applySettings: (u) => {
        pushed.push(u);
        if (u.origin === 'api' && u.timeoutMs !== undefined) inForce = { ...inForce, timeoutMs: u.timeoutMs };
      },
      settings: () => inForce,
      report: () => [],
      forget: () => 2,
      jsCloseBegin: (layer, code, type, index, service) =>
        calls.push(`begin ${layer} ${code} ${type}:${index}/${service}`),
      jsCloseEnd: () => {
        calls.push('end');
        return false;
      },
    };
    installNativeBridge(bridge);
    // The environment's settings, marked as such: the registry keeps the first copy's.
    expect(pushed).toEqual([
      {
        origin: 'env',
        timeoutMs: 3000,
        onTimeout: 'exit',
        layers: { js: true, tls: true, atexit: true },
        report: 'off',
        timeoutSource: 'the default',
        onTimeoutSource: 'the default',
      },
    ]);
    // What is in force is the registry's, not this realm's.
    expect(currentConfig()).toEqual({ timeoutMs: 1234, onTimeout: 'warn', signals: [], workers: 'off' });
    configure({ timeoutMs: 700 });
    expect(pushed[1]).toEqual({
      origin: 'api',
      timeoutMs: 700,
      timeoutSource: 'configure({ timeoutMs: 700 })',
    });
    expect(currentConfig().timeoutMs).toBe(700);

    expect(deviceType('late-vendor')).toBe(300);
    expect(isExiting()).toBe(false);
    expect(calls).toContain('isExiting');
    closeAtExit(deviceId('cpu', 0), 'queue', () => {});
    closeServices({ final: false });
    // The JS close is watched (explicit: code -1), then the native closes run.
    expect(calls.slice(-3)).toEqual(['begin explicit -1 1:0/queue', 'end', 'closeAll explicit false']);
    expect(isExiting()).toBe(false);
  });
});
