import { describe, expect, it } from 'vitest';
import {
  closeAtExit,
  closeServices,
  deviceId,
  deviceType,
  installNativeBridge,
  isExiting,
} from '../src/index.js';
import type { NativeBridge } from '../src/state.js';

// A fake bridge: what core does with @devexit/native, without the addon.
describe('the native bridge', () => {
  it('reads the exiting flag with a call where external buffers are refused, and delegates types', () => {
    let flag = false;
    const calls: string[] = [];
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
      configure: (t, o) => calls.push(`configure ${t} ${o}`),
      report: () => [],
      forget: () => 2,
      jsLayerEnabled: true,
    };
    installNativeBridge(bridge);
    expect(calls).toEqual(['configure 3000 exit']);
    expect(deviceType('late-vendor')).toBe(300);
    expect(isExiting()).toBe(false);
    expect(calls).toContain('isExiting');
    closeAtExit(deviceId('cpu', 0), 'queue', () => {});
    closeServices({ final: false });
    expect(calls).toContain('closeAll explicit false');
    expect(isExiting()).toBe(false);
  });
});
