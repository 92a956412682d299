// NVRTC for real (CI: Debian's libnvrtc11.2 with libnvrtc-builtins11.8). No device is needed to
// compile: this file never loads libcuda.
import { type CompileOptions, compile, stopCompiler } from '@devexit/cuda';
import { describe, expect, it } from 'vitest';
import { NO_DRIVER_ENV, probeIn, skipped, unavailable, useEnv } from './runtimes.js';

const { ADD, SPIN } = require('./fixtures/kernels.cjs') as { ADD: string; SPIN: string };

async function failure(fn: () => unknown): Promise<Record<string, unknown> | undefined> {
  try {
    await fn();
  } catch (err) {
    return err as Record<string, unknown>;
  }
  return undefined;
}

const BUILTINS = ['fill_u32', 'copy', 'saxpy_f32', 'sum_f32'];
const why = unavailable('nvrtc');
// libcuda is never loaded here (no cuInit): the compiler needs none.
useEnv(NO_DRIVER_ENV);

async function timed(source: string, options: CompileOptions): Promise<[string, number]> {
  const start = performance.now();
  const ptx = await compile(source, options);
  return [ptx, performance.now() - start];
}

describe('cuda: NVRTC (real libnvrtc)', () => {
  if (why) return skipped(why);

  it('compile(src, { signal }): aborted before or during the compile it rejects with an AbortError; the compiler goes on (real NVRTC)', async () => {
    const source = (await import('@devexit/cuda')).builtinKernelSource();
    expect(
      await failure(() => compile(source, { arch: 'sm_90', signal: AbortSignal.abort() })),
    ).toMatchObject({
      name: 'AbortError',
      code: 'ABORT_ERR',
    });
    for (let i = 0; i < 3; i++) {
      const ac = new AbortController();
      const pending = compile(source, { arch: 'sm_90', signal: ac.signal });
      setTimeout(() => ac.abort(new Error('too slow')), 2);
      expect(await failure(() => pending)).toMatchObject({
        name: 'AbortError',
        cause: { message: 'too slow' },
      });
    }
    expect(await compile(source, { arch: 'sm_90' })).toMatch(/\.target sm_90/);
  });

  it('compile(src, { arch: "sm_90" }) returns PTX for sm_90; the first compile and later ones, timed (real NVRTC)', async () => {
    const { backend } = await import('@devexit/cuda');
    const p = await backend.probe();
    expect(p.available).toBe(false); // no libcuda in this process, by design
    expect(p.versions?.nvrtc).toMatch(/^libnvrtc\.so[.\d]* \(\d+\.\d+\)$/);
    const source = (await import('@devexit/cuda')).builtinKernelSource();
    const times: number[] = [];
    let ptx = '';
    for (let i = 0; i < 4; i++) {
      const [out, ms] = await timed(source, { arch: 'sm_90' });
      ptx = out;
      times.push(ms);
    }
    console.log(
      `NVRTC compile of the built-ins for sm_90: first ${times[0]!.toFixed(1)} ms, then ${times
        .slice(1)
        .map((t) => t.toFixed(1))
        .join(', ')} ms`,
    );
    expect(ptx).toContain('.target sm_90');
    expect(ptx).toMatch(/^\.version \d+\.\d+$/m);
    for (const k of BUILTINS) expect(ptx, k).toMatch(new RegExp(`\\.entry ${k}\\(`));
  });

  for (const arch of ['sm_52', 'sm_80', 'compute_90']) {
    it(`compiles the built-in kernels for ${arch} (real NVRTC)`, async () => {
      const { builtinKernelSource } = await import('@devexit/cuda');
      const ptx = await compile(builtinKernelSource(), { arch });
      expect(ptx).toContain(`.target sm_${arch.split('_')[1]}`);
      for (const k of BUILTINS) expect(ptx, k).toContain(`.entry ${k}(`);
    });
  }

  it('compiles the test kernels (spin reads the global timer) with options and a name (real NVRTC)', async () => {
    const spin = await compile(SPIN, { arch: 'sm_90', options: ['-lineinfo'], name: 'spin.cu' });
    expect(spin).toContain('.entry spin(');
    expect(spin).toContain('%globaltimer');
    const add = await compile(ADD, { arch: 'sm_80', options: ['-DUNUSED=1', '--use_fast_math'] });
    expect(add).toContain('.entry add_u32(');
  });

  it('bad source rejects with NVRTC_ERROR_COMPILATION (cudaError and vendorError) and the compiler log (real NVRTC)', async () => {
    const err = await failure(() =>
      compile('extern "C" __global__ void broken(unsigned* p) { p[0] = undeclared_name; }', {
        arch: 'sm_90',
        name: 'broken.cu',
      }),
    );
    expect(err).toMatchObject({
      code: 'ERR_DEVEXIT_BACKEND',
      cudaError: 'NVRTC_ERROR_COMPILATION',
      vendorError: 'NVRTC_ERROR_COMPILATION',
    });
    expect(String(err?.message)).toMatch(/broken\.cu\(1\): error: identifier "undeclared_name" is undefined/);
  });

  it('an option NVRTC refuses rejects with NVRTC_ERROR_INVALID_OPTION; an arch it does not know too (real NVRTC)', async () => {
    const bad = await failure(() => compile(ADD, { options: ['--no-such-option'] }));
    expect(bad).toMatchObject({ code: 'ERR_DEVEXIT_BACKEND', cudaError: 'NVRTC_ERROR_INVALID_OPTION' });
    const arch = await failure(() => compile(ADD, { arch: 'sm_999' }));
    expect(arch).toMatchObject({ code: 'ERR_DEVEXIT_BACKEND', cudaError: 'NVRTC_ERROR_INVALID_OPTION' });
  });

  it('bad arguments are TypeErrors naming the argument, and start nothing (real NVRTC)', async () => {
    const bad = (v: unknown) => v as never;
    for (const [call, argument] of [
      [() => compile(bad(42)), 'source'],
      [() => compile(''), 'source'],
      [() => compile(ADD, bad('sm_90')), 'options'],
      [() => compile(ADD, { arch: 'gfx90a' }), 'options.arch'],
      [() => compile(ADD, { options: bad('-O3') }), 'options.options'],
      [() => compile(ADD, { options: bad([3]) }), 'options.options'],
      [() => compile(ADD, { name: bad(7) }), 'options.name'],
      [() => compile(ADD, bad({ arhc: 'sm_90' })), 'compile() options has an unknown option "arhc"'],
    ] as const) {
      const err = await failure(call);
      expect(err, argument).toBeInstanceOf(TypeError);
      expect(String(err?.message)).toContain(argument);
    }
  });

  it('stopCompiler() finishes queued compiles, then compile() starts a new service (real NVRTC)', async () => {
    const queued = [compile(ADD, { arch: 'sm_90' }), compile(SPIN, { arch: 'sm_90' })];
    await stopCompiler();
    for (const ptx of await Promise.all(queued)) expect(ptx).toContain('.target sm_90');
    const { compilerState } = await import('@devexit/cuda');
    expect(compilerState()).toBeNull();
    expect(await compile(ADD, { arch: 'sm_90' })).toContain('.entry add_u32(');
    expect(compilerState()).not.toBeNull();
  });
});

describe('cuda: without any CUDA library (DEVEXIT_CUDA_LIBRARY and DEVEXIT_NVRTC_LIBRARY point at nothing)', () => {
  it('the package loads and probe() says why it is unavailable, naming both libraries', () => {
    const p = probeIn({
      DEVEXIT_CUDA_LIBRARY: '/nonexistent/devexit-test/libcuda.so.1',
      DEVEXIT_NVRTC_LIBRARY: '/nonexistent/devexit-test/libnvrtc.so.12',
    });
    expect(p.available).toBe(false);
    if (p.available) return;
    expect(p.reason).toMatch(
      /^library missing: \/nonexistent\/devexit-test\/libcuda\.so\.1: cannot open shared object file/,
    );
    expect(p.reason).toContain('(DEVEXIT_CUDA_LIBRARY)');
    expect(p.reason).toMatch(
      /no NVRTC: NVRTC not found \(\/nonexistent\/devexit-test\/libnvrtc\.so\.12: cannot open/,
    );
    expect(p.versions).toMatchObject({ nvrtc: 'missing' });
  });
});
