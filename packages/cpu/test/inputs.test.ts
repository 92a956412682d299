import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { deviceId, formatDeviceId } from '@devexit/core';
import { backend } from '@devexit/cpu';
import { describe, expect, it } from 'vitest';

// Issue 18 (one validator, one settings grammar). Each of these failed before: open(-1) gave
// ERR_INVALID_ARG_VALUE where deviceId('cpu', -1) gave ERR_OUT_OF_RANGE; loadKernel('/tmp/a\0b')
// opened /tmp/a; DEVEXIT_CPU_DEVICES=" 2 " made cpu unavailable; a bad value was no warning.

const codeOf = async (fn: () => unknown) => {
  try {
    await fn();
  } catch (err) {
    return { name: (err as Error).name, code: (err as { code?: string }).code };
  }
  return 'accepted';
};

describe('cpu: one code per mistake', () => {
  it('open(-1) and deviceId("cpu", -1) fail alike: RangeError ERR_OUT_OF_RANGE', async () => {
    const want = { name: 'RangeError', code: 'ERR_OUT_OF_RANGE' };
    expect(await codeOf(() => deviceId('cpu', -1))).toEqual(want);
    expect(await codeOf(() => backend.open(-1))).toEqual(want);
    expect(await codeOf(() => backend.open(1.5))).toEqual(want);
    expect(await codeOf(() => formatDeviceId(Number.NaN as never))).toMatchObject({
      code: 'ERR_INVALID_ARG_TYPE',
    });
  });

  it('loadKernel refuses a path holding a NUL, and an empty one, before anything is loaded', async () => {
    const d = await backend.open(0);
    try {
      const err = await d.loadKernel('/tmp/a\0b', 'f').catch((e: unknown) => e as Error & { code?: string });
      expect(err).toMatchObject({ name: 'TypeError', code: 'ERR_INVALID_ARG_VALUE' });
      expect((err as Error).message).toContain('without NUL');
      expect(await d.loadKernel('', 'f').catch((e: { code?: string }) => e.code)).toBe(
        'ERR_INVALID_ARG_VALUE',
      );
      const long = `/tmp/${'x'.repeat(5000)}.so`;
      const missing = await d.loadKernel(long, 'f').catch((e: Error) => e.message);
      expect(String(missing).length).toBeLessThan(600);
    } finally {
      await d.close();
    }
  });
});

describe('cpu: settings with core grammar', () => {
  const probe = (env: Record<string, string>) => {
    const r = spawnSync(
      process.execPath,
      [
        '-e',
        'require(process.argv[1]).backend.probe().then((p) => console.log(JSON.stringify(p.devices)))',
        join(__dirname, '..'),
      ],
      { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 20_000 },
    );
    return { devices: JSON.parse(r.stdout.trim() || 'null') as unknown, stderr: r.stderr };
  };

  it('DEVEXIT_CPU_DEVICES=" 2 " gives two devices, "lots" a warning naming it and the default', () => {
    expect(probe({ DEVEXIT_CPU_DEVICES: ' 2 ' })).toEqual({ devices: 2, stderr: '' });
    const bad = probe({ DEVEXIT_CPU_DEVICES: 'lots' });
    expect(bad.devices).toBe(1);
    expect(bad.stderr).toContain('DEVEXIT_CPU_DEVICES="lots"');
  });
});
