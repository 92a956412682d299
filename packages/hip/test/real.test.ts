// HIP on the real runtime (Debian 12's ROCm 5.2.3 in CI, no GPU there): probe, hiprtc.
import { backend, builtinKernelSource, compile, refuseArch } from '@devexit/hip';
import { describe, expect, it } from 'vitest';
import { realRuntime } from './realRuntime.js';

async function failure(fn: () => unknown): Promise<Record<string, unknown> | undefined> {
  try {
    await fn();
  } catch (err) {
    return err as Record<string, unknown>;
  }
  return undefined;
}

const hasElfSymbol = (co: Uint8Array, name: string) => Buffer.from(co).includes(`${name}\0`);

describe('hip on the real libamdhip64', () => {
  const real = async (ctx: { skip: (note?: string) => never }) => {
    const { probe, missing } = await realRuntime();
    if (missing) ctx.skip(missing);
    return probe;
  };

  it('probe() names the library and runtime version; without a GPU it says why with the HIP error name', async (ctx) => {
    const realProbe = await real(ctx);
    expect(realProbe.versions?.library).toMatch(/libamdhip64\.so/);
    expect(realProbe.versions?.runtime).toMatch(/^\d+\.\d+\.\d+$/);
    expect(realProbe.versions?.standin).toBeUndefined();
    if (realProbe.available) {
      expect(realProbe.devices).toBeGreaterThanOrEqual(1);
      return;
    }
    expect(realProbe.reason).toMatch(
      /^no HIP device: hipGetDeviceCount returned hipErrorNoDevice \(100\) \(hipInit returned hipError\w+ \(\d+\)\)$/,
    );
    expect(await failure(() => backend.deviceCount())).toMatchObject({ code: 'ERR_DEVEXIT_UNAVAILABLE' });
    const err = await failure(() => backend.open(0));
    expect(err).toMatchObject({ code: 'ERR_DEVEXIT_UNAVAILABLE' });
    expect(String(err?.message)).toContain('hipErrorNoDevice');
  });

  for (const arch of ['gfx90a', 'gfx1030']) {
    it(`hiprtc compiles the built-in kernels for ${arch} without a device`, async (ctx) => {
      await real(ctx);
      const co = await compile(builtinKernelSource(), { arch });
      expect(Buffer.from(co.subarray(0, 4)).toString('latin1')).toBe('\x7fELF');
      for (const k of ['fill_u32', 'copy', 'saxpy_f32', 'sum_f32']) expect(hasElfSymbol(co, k), k).toBe(true);
    });
  }

  it('compile(src, { signal }): aborted before or during the hiprtc compile it rejects with an AbortError; the compiler goes on', async (ctx) => {
    await real(ctx);
    const src = builtinKernelSource();
    expect(await failure(() => compile(src, { arch: 'gfx90a', signal: AbortSignal.abort() }))).toMatchObject({
      name: 'AbortError',
      code: 'ABORT_ERR',
    });
    const ac = new AbortController();
    const pending = compile(src, { arch: 'gfx90a', signal: ac.signal });
    setTimeout(() => ac.abort(), 2);
    expect(await failure(() => pending)).toMatchObject({ name: 'AbortError' });
    expect((await compile(src, { arch: 'gfx90a' })).length).toBeGreaterThan(1000);
  });

  it('targets that abort ROCm 5.x comgr (gfx1100, gfx942) are refused with a clear error, the process lives on', async (ctx) => {
    const realProbe = await real(ctx);
    const v = realProbe.versions?.runtime ?? '0';
    if (Number(v.split('.')[0]) >= 6) {
      expect(refuseArch('gfx1100')).toBeUndefined();
      return;
    }
    for (const arch of ['gfx1100', 'gfx942', 'gfx940:xnack-']) {
      const err = await failure(() => compile(builtinKernelSource(), { arch }));
      expect(err).toMatchObject({ code: 'ERR_DEVEXIT_BACKEND' });
      expect(String(err?.message)).toContain(`cannot compile for ${arch}`);
    }
    expect(refuseArch('gfx90a:sramecc+:xnack-')).toBeUndefined();
    // Still alive and still compiling.
    expect((await compile(builtinKernelSource(), { arch: 'gfx90a' })).length).toBeGreaterThan(1000);
  });

  it('a compile error carries HIPRTC_ERROR_COMPILATION and the compiler log', async (ctx) => {
    await real(ctx);
    const err = await failure(() =>
      compile('extern "C" __global__ void broken(unsigned* p) { p[0] = undeclared; }', { arch: 'gfx90a' }),
    );
    expect(err).toMatchObject({ code: 'ERR_DEVEXIT_BACKEND', hipError: 'HIPRTC_ERROR_COMPILATION' });
    expect(String(err?.message)).toMatch(/undeclared/);
  });

  it('bad compile options are TypeErrors naming the option', async (ctx) => {
    await real(ctx);
    expect(await failure(() => compile(builtinKernelSource(), { arch: 'sm_80' }))).toBeInstanceOf(TypeError);
    expect(await failure(() => compile(42 as never, { arch: 'gfx90a' }))).toBeInstanceOf(TypeError);
  });
});
