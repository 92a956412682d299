#!/usr/bin/env node
// pnpm --filter @devexit/cuda test:device (tooling/device-checks/cuda/test-device.mjs) — on a machine with an NVIDIA GPU (the driver's
// libcuda.so.1 on the loader path, NVRTC installed, the workspace built), in under 5 minutes:
//   1. the conformance suite and its exit-path matrix on device 0 (device/conformance.test.ts)
//   2. the real-GPU exit race: a context, a stream and a kernel in flight at exit, 4 exit paths,
//      with devexit and with DEVEXIT_GUARD=0 (device/gpuExit.test.ts)
//   3. figures: submits and exit latency (a kernel in flight; 1,000 launches queued behind one)
//      through devexit against raw driver calls (bench-device.mjs)
// Without a GPU it fails at once, saying why. --dry-run-standin runs it all on the stand-in
// libcuda instead, to check the script; its results say nothing about a GPU.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));
// @devexit/cuda's own test fixtures (the workspace's copy).
const pkg = dirname(require.resolve('@devexit/cuda/package.json'));
const dry = process.argv.includes('--dry-run-standin');
const env = { ...process.env, DEVEXIT_CUDA_DEVICE_DRY_RUN: dry ? '1' : '' };
if (dry) env.DEVEXIT_CUDA_LIBRARY = require('@devexit/standins-cuda').standinCudaPath;
else delete env.DEVEXIT_CUDA_LIBRARY;
const started = performance.now();
const elapsed = () => `${((performance.now() - started) / 1000).toFixed(1)} s`;

const probe = spawnSync(process.execPath, [join(pkg, 'test', 'fixtures', 'probe.cjs')], {
  env,
  encoding: 'utf8',
});
const p = JSON.parse(
  probe.stdout.trim().split('\n').pop() || '{"available":false,"reason":"the probe failed"}',
);
if (!p.available) {
  console.error(`test:device FAILED: no NVIDIA GPU here. probe(): ${p.reason}`);
  process.exit(1);
}
console.log(
  `test:device on ${dry ? 'the STAND-IN libcuda (dry run, not a GPU)' : 'an NVIDIA GPU'}: ${JSON.stringify(p)}`,
);

const steps = [
  {
    name: 'conformance, exit matrix and the GPU exit race (vitest)',
    argv: [
      join(dirname(require.resolve('vitest/package.json')), 'vitest.mjs'),
      'run',
      '--config',
      'vitest.device.config.mts',
    ],
    timeout: 210_000,
  },
  {
    name: 'figures against raw driver calls',
    argv: [join(here, 'bench-device.mjs')],
    timeout: 75_000,
  },
];
let failed = 0;
for (const step of steps) {
  console.log(`\n== ${step.name} (at ${elapsed()})`);
  const r = spawnSync(process.execPath, step.argv, {
    cwd: here,
    env,
    stdio: 'inherit',
    timeout: step.timeout,
  });
  if (r.status !== 0) {
    failed++;
    console.error(
      `== ${step.name}: FAILED (${r.error ? r.error.message : `status ${r.status}, signal ${r.signal}`})`,
    );
  }
}
console.log(
  `\ntest:device ${failed ? `FAILED (${failed} of ${steps.length} steps)` : 'passed'} in ${elapsed()}${dry ? ' (dry run on the stand-in)' : ''}`,
);
process.exit(failed ? 1 : 0);
