import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const bin = join(__dirname, '..', 'dist', 'bin.js');
const run = (args: string[], env: Record<string, string> = {}) =>
  spawnSync(process.execPath, [bin, ...args], {
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, ...env },
  });

describe('devexit CLI', () => {
  it('doctor says the guard is armed on the main thread and lists every backend with a reason', () => {
    const r = run(['doctor', '--json']);
    expect(r.status, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.libc).toMatch(/^glibc \d+\.\d+/);
    expect(report.guard.tls).toEqual({ armed: true, by: 'init_array' });
    expect(report.guard.layers).toEqual({ js: true, tls: true, atexit: true });
    expect(report.backends.map((b: { name: string }) => b.name)).toEqual(['cpu', 'cuda', 'hip', 'wgpu']);
    expect(report.backends[0]).toMatchObject({ name: 'cpu', available: true });
    for (const b of report.backends) {
      if (!b.available) expect(typeof b.reason === 'string' && b.reason.length > 0).toBe(true);
    }
    expect(report.backends[1]).toEqual({ name: 'cuda', available: false, reason: 'not installed' });
  });

  it('doctor (text) shows DEVEXIT_GUARD=0 as layers off', () => {
    const r = run(['doctor'], { DEVEXIT_GUARD: '0' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('exit layers  js OFF, main-thread guard OFF, atexit OFF');
    expect(r.stdout).toMatch(/cpu {3}available: \d+ device/);
  });

  it('demo on cpu: clean exits with devexit, the stand-in crash with the guard disabled', () => {
    const r = run(['demo', '--runs', '2', '--backend', 'cpu']);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    const rows = r.stdout.split('\n').filter((l) => l.startsWith('cpu '));
    expect(rows).toHaveLength(4);
    for (const row of rows) {
      expect(row).toMatch(/clean: (exit \d+), 2 closes/);
      expect(row).toMatch(/CRASH [12]\/2/);
    }
  });

  it('rejects bad arguments with usage', () => {
    const r = run(['demo', '--runs', 'many']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('bad argument "--runs"');
    expect(run(['frobnicate']).status).toBe(2);
  });
});
