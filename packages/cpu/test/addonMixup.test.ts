import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// Issue 18, held-out probes that failed before the loader checked what it loaded:
// DEVEXIT_CPU_ADDON at the hip addon made probe() say available and open() throw "not a device
// handle" with no code; DEVEXIT_CPU_ADDON=/etc/passwd was require'd as JavaScript; and
// DEVEXIT_NATIVE_PATH at the cpu addon threw an uncaught TypeError at require.
const root = join(__dirname, '..', '..');
const fixture = join(__dirname, 'fixtures', 'addonMixup.cjs');

function run(env: Record<string, string>): Record<string, unknown> {
  const r = spawnSync(process.execPath, [fixture], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 20_000,
  });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as Record<string, unknown>;
}

describe('cpu: the loader refuses an addon that is not devexit_cpu', () => {
  it('DEVEXIT_CPU_ADDON at the hip addon: unavailable, open() names expected and found', () => {
    const hip = join(root, 'hip', 'build', 'Release', 'devexit_hip.node');
    const out = run({ DEVEXIT_CPU_ADDON: hip });
    expect(out.probe).toEqual({
      available: false,
      reason: `devexit: cannot load devexit_cpu.node: ${hip} is not devexit_cpu: expected devexit_cpu (exports probe, open, threads, loadKernel, submit); found devexit_hip.node, which lacks threads, loadKernel.`,
    });
    expect(out.open).toMatchObject({ name: 'DevexitError', code: 'ERR_DEVEXIT_UNAVAILABLE' });
    expect(out.openMessage).toContain('is not devexit_cpu: expected devexit_cpu');
  });

  it('DEVEXIT_CPU_ADDON=/etc/passwd: not run as JavaScript, unavailable', () => {
    const out = run({ DEVEXIT_CPU_ADDON: '/etc/passwd' });
    expect(out.probe).toEqual({
      available: false,
      reason:
        'devexit: cannot load devexit_cpu.node: /etc/passwd is not a .node file (an addon is loaded only from a .node file).',
    });
    expect(out.open).toMatchObject({ code: 'ERR_DEVEXIT_UNAVAILABLE' });
  });

  it('DEVEXIT_NATIVE_PATH at the cpu addon: a typed error at require, not a TypeError', () => {
    const cpu = join(root, 'cpu', 'build', 'Release', 'devexit_cpu.node');
    const out = run({ DEVEXIT_NATIVE_PATH: cpu });
    expect(out.require).toEqual({
      name: 'DevexitError',
      code: 'ERR_DEVEXIT_UNAVAILABLE',
      first: `devexit: cannot load devexit_native.node: ${cpu} is not devexit_native: expected devexit_native (exports isExiting, closeAll, applySettings, state); found devexit_cpu.node, which lacks isExiting, closeAll, applySettings, state.`,
    });
  });
});
