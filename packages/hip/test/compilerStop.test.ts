// The stop rule of every devexit service (packages/native/README.md, "Stop rule"): stopping the
// compiler finishes the compiles queued before the stop. cuda's test/compilerStop.test.ts asserts
// the same of NVRTC's compiler.
import { standinHipPath } from '@devexit/standins-hip';
import { expect, it } from 'vitest';

process.env.DEVEXIT_HIP_LIBRARY = standinHipPath;

// The stand-in's hiprtc compiles the kernels it has host functions for (add_u32 among them).
const KERNEL = (i: number) =>
  `extern "C" __global__ void add_u32(unsigned* b, unsigned v, unsigned n) { /* ${i} */ }`;

it('stopCompiler() with compiles queued: every queued compile runs, none is dropped (hiprtc, stand-in libamdhip64)', async () => {
  const hip = await import('@devexit/hip');
  const queued = [0, 1, 2, 3].map((i) => hip.compile(KERNEL(i), { arch: 'gfx90a' }));
  const all = Promise.allSettled(queued); // handled before any rejects
  await hip.stopCompiler();
  const settled = await all;
  expect(
    settled.map((s) => (s.status === 'fulfilled' ? 'compiled' : (s.reason as { code?: string }).code)),
  ).toEqual(['compiled', 'compiled', 'compiled', 'compiled']);
  expect(hip.compilerState()).toBeNull();
  // A later compile starts a new compiler.
  await expect(hip.compile(KERNEL(9), { arch: 'gfx90a' })).resolves.toBeInstanceOf(Uint8Array);
  await hip.stopCompiler();
}, 120_000);
