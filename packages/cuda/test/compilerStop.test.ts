// The stop rule of every devexit service (packages/native/README.md, "Stop rule"): stopping the
// compiler finishes the compiles queued before the stop. hip's test/compilerStop.test.ts asserts
// the same of hiprtc's compiler. Runs without NVRTC too: each queued compile then runs and fails
// for want of NVRTC, which still tells "ran" from "dropped" (ERR_DEVEXIT_DEVICE_CLOSED).
import { expect, it } from 'vitest';

const KERNEL = (i: number) => `extern "C" __global__ void k${i}(unsigned* b) { b[0] = ${i}; }`;

it('stopCompiler() with compiles queued: every queued compile runs, none is dropped (NVRTC, or its absence)', async () => {
  const cuda = await import('@devexit/cuda');
  const queued = [0, 1, 2, 3].map((i) => cuda.compile(KERNEL(i), { arch: 'compute_52' }));
  const all = Promise.allSettled(queued); // handled before any rejects
  await cuda.stopCompiler();
  const settled = await all;
  const ran = settled.map((s) =>
    s.status === 'fulfilled'
      ? 'ran'
      : (s.reason as { code?: string }).code === 'ERR_DEVEXIT_BACKEND'
        ? 'ran'
        : 'dropped',
  );
  expect(
    ran,
    JSON.stringify(settled.map((s) => (s.status === 'rejected' ? String(s.reason) : 'ok'))),
  ).toEqual(['ran', 'ran', 'ran', 'ran']);
  expect(cuda.compilerState()).toBeNull();
}, 120_000);
