#!/usr/bin/env node
// Figures of `pnpm test:device` for hip (a script that prints, not a test): submits and exit
// latency through devexit against the same work through raw HIP runtime calls
// (scripts/raw_hip.c, built here with cc), on device 0. The same figures as tooling/bench's cpu
// rows: tiny launches per second, a flush round trip, and process.exit with 1,000 launches
// queued behind a running one. DEVEXIT_HIP_DEVICE_DRY_RUN=1 (with DEVEXIT_HIP_LIBRARY pointing
// at the stand-in) runs it without a GPU, to check the script: its figures say nothing about one.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));
const hip = require('@devexit/hip');

// ~us microseconds on the device's constant-rate clock (wall_clock64(): 100 MHz on current AMD
// GPUs; approximate is enough, the script measures one launch's own duration).
const SLEEP = `
extern "C" __global__ void sleep_us(unsigned us) {
  unsigned long long start = wall_clock64();
  while (wall_clock64() - start < 100ull * us) __builtin_amdgcn_s_sleep(1);
}
`;
const LAUNCHES = 100_000;
const EXIT_RUNS = 10;
const SPIN_US = 50_000;
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

const dir = mkdtempSync(join(tmpdir(), 'devexit-hip-bench-'));
try {
  const probe = await hip.backend.probe();
  if (!probe.available) throw new Error(`no device: ${probe.reason}`);
  const device = await hip.backend.open(0);
  console.log(`bench on ${device.name}, ${JSON.stringify(probe.versions)}`);

  const raw = join(dir, 'raw_hip');
  const cc = spawnSync('cc', ['-O2', join(here, 'raw_hip.c'), '-o', raw, '-ldl'], { encoding: 'utf8' });
  if (cc.status !== 0) throw new Error(`cannot build the raw-HIP baseline: ${cc.stderr || cc.error}`);
  const image = join(dir, 'kernels.co');
  writeFileSync(image, await hip.compile(hip.builtinKernelSource() + SLEEP));

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
  // One sleep_us launch, to its end: the "running command" of the exit figure.
  const sleep = await device.loadKernel(SLEEP, 'sleep_us');
  const one = [];
  for (let i = 0; i < 3; i++) {
    t = performance.now();
    q.launch(sleep, 1, [{ u32: SPIN_US }]);
    await q.flush();
    one.push(performance.now() - t);
  }
  const commandMs = median(one);
  const base = spawnSync(raw, [image, 'launches', String(LAUNCHES)], { encoding: 'utf8' });
  if (base.status !== 0) throw new Error(`raw_hip launches failed: ${base.stderr}`);
  const rawLaunches = Number(/launches_per_s (\S+)/.exec(base.stdout)?.[1]);
  const rawSyncUs = Number(/sync_us (\S+)/.exec(base.stdout)?.[1]);
  row('launches per second (fill_u32, 1 element, batched submits)', launchesPerS, rawLaunches, '/s');
  row('flush round trip (await q.flush() vs hipStreamSynchronize, idle stream)', flushUs, rawSyncUs, 'µs');
  await device.close();

  // Exit latency: from the child's "busy" (20 ms into the running launch) to its end.
  const exitMs = (cmd, argv) =>
    new Promise((resolve, reject) => {
      const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'inherit'] });
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
  const series = async (cmd, argv) => {
    const out = [];
    for (let i = 0; i < EXIT_RUNS; i++) out.push(await exitMs(cmd, argv));
    return median(out);
  };
  // devexit drops what is still in its own queue; launches its queue thread already handed to the
  // stream run before the close's synchronize returns. Target: within the running command + 5 ms.
  const queued = await series(process.execPath, [
    join(here, 'queued-exit.cjs'),
    image,
    String(SPIN_US),
    '1000',
  ]);
  const queuedRaw = await series(raw, [image, 'queued', String(SPIN_US), '1000']);
  row('exit latency, 1,000 launches queued behind one: devexit vs raw HIP program', queued, queuedRaw, 'ms');
  row('exit latency, 1,000 launches queued: devexit vs one launch (target ≤ +5 ms)', queued, commandMs, 'ms');
  console.table(rows);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
