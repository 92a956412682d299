#!/usr/bin/env node
// Figures of `pnpm test:device` (a script that prints, not a test): submits and exit latency
// through devexit against the same work through raw driver calls (scripts/raw_driver.c, built
// here with cc). Device 0. DEVEXIT_CUDA_DEVICE_DRY_RUN=1 runs it on the stand-in libcuda.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));
const cuda = require('@devexit/cuda');
const { SPIN } = require(
  join(dirname(require.resolve('@devexit/cuda/package.json')), 'test', 'fixtures', 'kernels.cjs'),
);
const gpuExit = join(here, 'device', 'fixtures', 'gpuExit.cjs');
const queuedExit = join(here, 'queued-exit.cjs');

const LAUNCHES = 100_000;
const EXIT_RUNS = 10;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const rows = [];
const row = (what, devexit, raw, unit) =>
  rows.push({
    what,
    devexit: devexit.toFixed(2),
    raw: raw.toFixed(2),
    ratio: (devexit / raw).toFixed(2),
    unit,
  });

const dir = mkdtempSync(join(tmpdir(), 'devexit-cuda-bench-'));
try {
  const probe = await cuda.backend.probe();
  if (!probe.available) throw new Error(`no device: ${probe.reason}`);
  const device = await cuda.backend.open(0);
  console.log(
    `bench on ${device.name} (${device.arch}), ${probe.versions.library}, driver ${probe.versions.driver}`,
  );

  // The baseline program, and its kernels: the built-ins and spin, as PTX for this device.
  const raw = join(dir, 'raw_driver');
  const cc = spawnSync('cc', ['-O2', join(here, 'raw_driver.c'), '-o', raw, '-ldl'], { encoding: 'utf8' });
  if (cc.status !== 0) throw new Error(`cannot build the raw-driver baseline: ${cc.stderr || cc.error}`);
  const ptxFile = join(dir, 'kernels.ptx');
  writeFileSync(ptxFile, await cuda.compile(cuda.builtinKernelSource() + SPIN, { arch: device.arch }));

  // Submits: LAUNCHES one-element fill_u32 launches, then a flush.
  const q = device.queue();
  const b = q.alloc(4);
  const fill = device.kernel('fill_u32');
  const args = [b, { u32: 7 }, { u32: 1 }];
  for (let i = 0; i < 1000; i++) q.launch(fill, 1, args);
  await q.flush();
  let t = performance.now();
  for (let i = 0; i < LAUNCHES; i++) q.launch(fill, 1, args);
  await q.flush();
  const launchesPerS = LAUNCHES / ((performance.now() - t) / 1e3);
  t = performance.now();
  for (let i = 0; i < 1000; i++) await q.flush();
  const flushUs = performance.now() - t; // 1000 flushes: their total milliseconds are microseconds each
  const base = spawnSync(raw, [ptxFile, 'launches', String(LAUNCHES)], { encoding: 'utf8' });
  if (base.status !== 0) throw new Error(`raw_driver launches failed: ${base.stderr}`);
  const rawLaunches = Number(/launches_per_s (\S+)/.exec(base.stdout)?.[1]);
  const rawSyncUs = Number(/sync_us (\S+)/.exec(base.stdout)?.[1]);
  row('launches per second (fill_u32, 1 element, batched submits)', launchesPerS, rawLaunches, '/s');
  row('flush round trip (await q.flush() vs cuStreamSynchronize, idle stream)', flushUs, rawSyncUs, 'µs');
  await device.close();

  // Exit latency: from the child's "busy" (a kernel spinning 50 ms in flight) to its end.
  const exitMs = (cmd, argv, env) =>
    new Promise((resolve, reject) => {
      const child = spawn(cmd, argv, {
        env: { ...process.env, ...env },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let out = '';
      child.stdout.on('data', (d) => {
        out += d;
      });
      child.on('error', reject);
      child.on('close', (code, signal) => {
        const busy = Number(/busy t=(\d+)/.exec(out)?.[1]);
        if (!busy) reject(new Error(`${cmd} ${argv.join(' ')}: no "busy" (code ${code}, signal ${signal})`));
        else resolve(Date.now() - busy);
      });
    });
  const series = async (cmd, argv, env) => {
    const out = [];
    for (let i = 0; i < EXIT_RUNS; i++) out.push(await exitMs(cmd, argv, env));
    return median(out);
  };
  const spinUs = '50000';
  const withDevexit = await series(process.execPath, [gpuExit, 'exit', spinUs], {});
  const withoutGuard = await series(process.execPath, [gpuExit, 'exit', spinUs], { DEVEXIT_GUARD: '0' });
  const rawExit = await series(raw, [ptxFile, 'exit', spinUs], {});
  row('exit latency, kernel (50 ms) in flight: devexit vs raw driver program', withDevexit, rawExit, 'ms');
  row('exit latency, kernel (50 ms) in flight: devexit vs DEVEXIT_GUARD=0', withDevexit, withoutGuard, 'ms');
  // As tooling/bench's cpu figure: process.exit with 1,000 launches queued behind a running one.
  // devexit drops what is still in its own queue; kernels its queue thread already handed to the
  // stream run before the close's synchronize returns (compare with the raw program, which exits
  // with all of them on the stream). Target: within the running command + 5 ms.
  const queuedDevexit = await series(process.execPath, [queuedExit, ptxFile, spinUs, '1000'], {});
  const queuedRaw = await series(raw, [ptxFile, 'queued', spinUs, '1000'], {});
  row(
    'exit latency, 1,000 launches queued behind one (50 ms): devexit vs raw driver program',
    queuedDevexit,
    queuedRaw,
    'ms',
  );
  row(
    'exit latency, 1,000 launches queued: devexit vs the running kernel (50 ms; target ≤ +5 ms)',
    queuedDevexit,
    50,
    'ms',
  );
  console.table(rows);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
