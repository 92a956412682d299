// The GPU of `pnpm test:device`: the real libcuda, device 0. Without a GPU the test files fail
// at collection with the probe's reason, never skip. DEVEXIT_CUDA_DEVICE_DRY_RUN=1 (the script's
// --dry-run-standin) runs them on the stand-in libcuda instead, to check the script itself; its
// figures say nothing about a GPU.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import type { ProbeResult } from '@devexit/core';
import { standinCudaPath } from '@devexit/standins-cuda';

export const DRY_RUN = process.env.DEVEXIT_CUDA_DEVICE_DRY_RUN === '1';
export const gpuEnv: Record<string, string | undefined> = DRY_RUN
  ? { DEVEXIT_CUDA_LIBRARY: standinCudaPath }
  : { DEVEXIT_CUDA_LIBRARY: undefined };
export const label = DRY_RUN ? 'DRY RUN on the stand-in libcuda, not a GPU' : 'NVIDIA GPU';
export const fixtures = join(__dirname, 'fixtures');

/** Sets this process's environment to the GPU's, and returns its probe; throws without a GPU. */
export function requireGpu(): ProbeResult & { available: true } {
  for (const [k, v] of Object.entries(gpuEnv)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  const r = spawnSync(
    process.execPath,
    [join(dirname(require.resolve('@devexit/cuda/package.json')), 'test', 'fixtures', 'probe.cjs')],
    {
      env: { ...process.env, NODE_OPTIONS: '' },
      encoding: 'utf8',
      timeout: 60_000,
    },
  );
  const p = JSON.parse(
    r.stdout.trim().split('\n').pop() || '{"available":false,"reason":"the probe child failed"}',
  );
  if (!p.available) throw new Error(`pnpm test:device needs an NVIDIA GPU; probe() says: ${p.reason}`);
  return p;
}
