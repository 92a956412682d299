// The cross-backend suite on the stand-in libcuda (no NVIDIA GPU here), its exit teardown in
// 'crash' mode: calls after it crash, as a worse runtime's would.
// The built-in kernels come from the real NVRTC. On an NVIDIA GPU: pnpm test:device (README).
import { defineConformance } from '@devexit/conformance';
import { standinCudaPath } from '@devexit/standins-cuda';
import { describe } from 'vitest';
import { skipped, unavailable, useEnv } from './runtimes.js';

const env = { DEVEXIT_CUDA_LIBRARY: standinCudaPath, DEVEXIT_STANDIN_CUDA_TEARDOWN: 'crash' };
const why = unavailable('standin');

if (why) {
  describe('cuda conformance [stand-in libcuda, teardown: crash]', () => skipped(why));
} else {
  // Read when libcuda first loads (the first probe), not at import.
  useEnv(env);
  defineConformance({
    name: 'cuda',
    label: 'stand-in libcuda, teardown: crash',
    load: async () => (await import('@devexit/cuda')).backend,
    childModule: '@devexit/cuda',
    childEnv: env,
    runs: 20,
    // The compiler service that compiled the built-in kernels closes at exit too.
    otherCloses: { 'cuda-host:0/compiler': 1 },
  });
}
