// Which CUDA runtimes the tests find, asked of a child process at collection time (an answer
// from a fresh process, whatever this one loaded). Where DEVEXIT_REQUIRE_BACKENDS names cuda (CI
// installs Debian's libcuda1 and libnvrtc11.2) a missing runtime fails the test file; elsewhere
// its tests skip with the probe's reason.
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { ProbeResult } from '@devexit/core';
import { standinCudaPath } from '@devexit/standins-cuda';
import { afterAll, it } from 'vitest';

export const fixtures = join(__dirname, 'fixtures');
// Before anything here could run the real cuInit.
const nvidiactlExisted = existsSync('/dev/nvidiactl');

export function required(): boolean {
  return (process.env.DEVEXIT_REQUIRE_BACKENDS ?? '').split(',').includes('cuda');
}

/** probe() in a child with this environment on top of ours (undefined values are removed). */
export function probeIn(env: Record<string, string | undefined>): ProbeResult {
  const childEnv: NodeJS.ProcessEnv = { ...process.env };
  delete childEnv.NODE_OPTIONS;
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete childEnv[k];
    else childEnv[k] = v;
  }
  const r = spawnSync(process.execPath, [join(fixtures, 'probe.cjs')], {
    env: childEnv,
    encoding: 'utf8',
    timeout: 30_000,
  });
  if (r.status !== 0)
    throw new Error(`probe child failed: status=${r.status} signal=${r.signal}\n${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as ProbeResult;
}

/** Sets this process's environment (undefined values are removed), before libcuda or NVRTC load. */
export function useEnv(env: Record<string, string | undefined>): void {
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
}

/** The real libcuda and NVRTC: never a stand-in or a path from the environment. */
export const REAL_ENV = { DEVEXIT_CUDA_LIBRARY: undefined, DEVEXIT_NVRTC_LIBRARY: undefined } as const;
/** No libcuda at all (so no cuInit), the real NVRTC. */
export const NO_DRIVER_ENV = {
  DEVEXIT_CUDA_LIBRARY: '/nonexistent/devexit-test/libcuda.so.1',
  DEVEXIT_NVRTC_LIBRARY: undefined,
};
const probed = new Map<string, ProbeResult>();

function probeOnce(key: string, env: Record<string, string | undefined>): ProbeResult {
  let p = probed.get(key);
  if (!p) {
    p = probeIn(env);
    probed.set(key, p);
  }
  return p;
}

/** probe() of the real libcuda and NVRTC (runs the real cuInit). */
export function probeReal(): ProbeResult {
  return probeOnce('real', REAL_ENV);
}

/**
 * Why tests that need `what` cannot run here, or undefined. Throws where DEVEXIT_REQUIRE_BACKENDS
 * names cuda. The stand-in runs kernels that the real NVRTC compiled, so it needs NVRTC too.
 */
export function unavailable(what: 'nvrtc' | 'libcuda' | 'standin'): string | undefined {
  let why: string | undefined;
  if (what === 'standin' && !existsSync(standinCudaPath)) {
    why = `the stand-in libcuda is not built (${standinCudaPath})`;
  } else if (what === 'libcuda') {
    const p = probeReal();
    if (!p.available && p.reason.startsWith('library missing')) why = p.reason;
  } else {
    // Asked with libcuda hidden on purpose: of the probe's reason, only NVRTC's part is news.
    const p = probeOnce('nvrtc', NO_DRIVER_ENV);
    const nvrtc = p.versions?.nvrtc;
    if (!nvrtc || nvrtc === 'missing') {
      const found = p.available ? undefined : /no NVRTC: (.*)$/.exec(p.reason)?.[1];
      why =
        `${what === 'standin' ? 'the stand-in libcuda runs kernels that the real NVRTC compiles, and ' : ''}` +
        `NVRTC is missing: ${found ?? 'not found'}; install NVRTC (Debian 12: libnvrtc11.2 and ` +
        'libnvrtc-builtins11.8, non-free) or set DEVEXIT_NVRTC_LIBRARY';
    }
  }
  if (why && required())
    throw new Error(`DEVEXIT_REQUIRE_BACKENDS names cuda but ${what} is unavailable here: ${why}`);
  if (why) console.warn(`@devexit/cuda: skipping the ${what} tests: ${why}`);
  return why;
}

/** Declares one test that skips with `why` (a describe block that cannot run here). */
export function skipped(why: string): void {
  it(`cannot run here: ${why}`, (ctx) => ctx.skip(why));
}

/**
 * Run as root, the real cuInit creates /dev/nvidiactl even without a GPU: remove it after the
 * file's tests if it was not there before them.
 */
export function cleanUpNvidiactl(): void {
  afterAll(() => {
    if (!nvidiactlExisted && existsSync('/dev/nvidiactl')) rmSync('/dev/nvidiactl', { force: true });
  });
}
