#!/usr/bin/env node
// pnpm --filter @devexit/hip test:device — on a machine with an AMD GPU (ROCm's libamdhip64 on
// the loader path, the workspace built): the figures of bench-device.mjs (submits and exit
// latency through devexit against raw HIP calls). Without a GPU it fails at once, saying why.
// --dry-run-standin runs it on the stand-in libamdhip64 instead, to check the script; its
// figures say nothing about a GPU.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));
// @devexit/hip's own test fixtures (the workspace's copy).
const pkg = dirname(require.resolve('@devexit/hip/package.json'));
const dry = process.argv.includes('--dry-run-standin');
const env = { ...process.env, DEVEXIT_HIP_DEVICE_DRY_RUN: dry ? '1' : '' };
if (dry) env.DEVEXIT_HIP_LIBRARY = require('@devexit/standins-hip').standinHipPath;
else delete env.DEVEXIT_HIP_LIBRARY;

const probe = spawnSync(process.execPath, [join(pkg, 'test', 'fixtures', 'standinChild.cjs'), 'probe'], {
  env,
  encoding: 'utf8',
});
const p = JSON.parse(
  probe.stdout.trim().split('\n').pop() || '{"available":false,"reason":"the probe failed"}',
);
if (!p.available) {
  console.error(`test:device FAILED: no AMD GPU here. probe(): ${p.reason}`);
  process.exit(1);
}
console.log(
  `test:device on ${dry ? 'the STAND-IN libamdhip64 (dry run, not a GPU)' : 'an AMD GPU'}: ${JSON.stringify(p)}`,
);
const r = spawnSync(process.execPath, [join(here, 'bench-device.mjs')], {
  cwd: here,
  env,
  stdio: 'inherit',
  timeout: 240_000,
});
const ok = r.status === 0;
console.log(`\ntest:device ${ok ? 'passed' : 'FAILED'}${dry ? ' (dry run on the stand-in)' : ''}`);
process.exit(ok ? 0 : 1);
