#!/usr/bin/env node
// devexit benchmarks: prints figures and writes bench-results/latest.json. Every comparison runs
// side by side in one run (interleaved), and is quoted as a ratio: these machines are noisy.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));
const quick = process.argv.includes('--quick');
const results = { date: new Date().toISOString(), node: process.version, quick, benches: {} };

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};
const fmt = (x, d = 2) => x.toFixed(d);

function child(code, env = {}) {
  const start = process.hrtime.bigint();
  const r = spawnSync(process.execPath, ['-e', code], {
    cwd: here,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (r.status !== 0) throw new Error(`child failed (${r.status} ${r.signal}): ${r.stderr}`);
  return { ms, stdout: r.stdout };
}

// 1. isExiting(): typed-array view vs a native call.
{
  const { isExiting } = require('@devexit/core');
  const { native } = require('@devexit/native');
  const view = new Uint32Array(native.exitingFlagBuffer());
  const N = quick ? 2e6 : 2e7;
  // One loop per variant: a shared loop taking closures would measure a megamorphic call.
  const loops = {
    view() {
      let x = 0;
      const t = process.hrtime.bigint();
      for (let i = 0; i < N; i++) x += Atomics.load(view, 0);
      return [Number(process.hrtime.bigint() - t) / N, x];
    },
    call() {
      let x = 0;
      const t = process.hrtime.bigint();
      for (let i = 0; i < N; i++) x += native.isExiting() ? 1 : 0;
      return [Number(process.hrtime.bigint() - t) / N, x];
    },
    core() {
      let x = 0;
      const t = process.hrtime.bigint();
      for (let i = 0; i < N; i++) x += isExiting() ? 1 : 0;
      return [Number(process.hrtime.bigint() - t) / N, x];
    },
  };
  const rows = { view: [], call: [], core: [] };
  for (let round = 0; round < 5; round++) {
    for (const k of Object.keys(loops)) {
      const [ns, x] = loops[k]();
      if (x !== 0) throw new Error('flag set');
      rows[k].push(ns);
    }
  }
  const b = {
    viewNs: median(rows.view),
    nativeCallNs: median(rows.call),
    coreIsExitingNs: median(rows.core),
  };
  b.callOverView = b.nativeCallNs / b.viewNs;
  b.callOverCore = b.nativeCallNs / b.coreIsExitingNs;
  results.benches.isExiting = b;
  console.log(
    `isExiting: typed-array view ${fmt(b.viewNs)} ns, core.isExiting() ${fmt(b.coreIsExitingNs)} ns, ` +
      `N-API call ${fmt(b.nativeCallNs)} ns (call/view ${fmt(b.callOverView, 1)}x, call/core.isExiting ${fmt(b.callOverCore, 1)}x)`,
  );
}

// 2. Exit overhead: 64 devices x 4 idle services vs a bare node exit, interleaved. Two figures:
// the whole child's wall time, and the exit latency (process.exit() called -> the parent sees the
// child gone), which is what the close adds to.
function exitLatency(setup) {
  return new Promise((resolve, reject) => {
    const code = `${setup}; setTimeout(() => { process.stdout.write(String(performance.timeOrigin + performance.now())); process.exit(0); }, 5);`;
    const start = performance.now();
    const c = spawn(process.execPath, ['-e', code], { cwd: here, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    c.stdout.on('data', (d) => {
      out += d;
    });
    c.on('error', reject);
    c.on('exit', (status) => {
      const now = performance.timeOrigin + performance.now();
      if (status !== 0) reject(new Error(`child exited ${status}`));
      else resolve({ wallMs: performance.now() - start, exitMs: now - Number(out) });
    });
  });
}
{
  const runs = quick ? 10 : 60;
  const setups = {
    bare: '',
    nativeLoaded: "require('@devexit/native'); require('@devexit/standins').loadFixture()",
    services64x4:
      "const fx = require('@devexit/standins').loadFixture(); for (let d = 0; d < 64; d++) for (const s of ['queue', 'compiler', 'copy', 'events']) fx.registerIdle('bench', d, s)",
  };
  const wall = { bare: [], nativeLoaded: [], services64x4: [] };
  const exit = { bare: [], nativeLoaded: [], services64x4: [] };
  for (let i = 0; i < runs; i++) {
    for (const [k, setup] of Object.entries(setups)) {
      const r = await exitLatency(setup);
      wall[k].push(r.wallMs);
      exit[k].push(r.exitMs);
    }
  }
  const b = { runs, wallMs: {}, exitMs: {} };
  for (const k of Object.keys(setups)) {
    b.wallMs[k] = median(wall[k]);
    b.exitMs[k] = median(exit[k]);
  }
  b.exitServicesOverBare = b.exitMs.services64x4 / b.exitMs.bare;
  b.exitServicesOverLoaded = b.exitMs.services64x4 / b.exitMs.nativeLoaded;
  b.wallServicesOverBare = b.wallMs.services64x4 / b.wallMs.bare;
  b.wallServicesOverLoaded = b.wallMs.services64x4 / b.wallMs.nativeLoaded;
  results.benches.exitOverhead = b;
  console.log(
    `exit latency (process.exit -> gone): bare ${fmt(b.exitMs.bare)} ms, devexit loaded ${fmt(b.exitMs.nativeLoaded)} ms, ` +
      `64x4 idle services ${fmt(b.exitMs.services64x4)} ms (x${fmt(b.exitServicesOverLoaded, 3)} of loaded, x${fmt(b.exitServicesOverBare, 3)} of bare)`,
  );
  console.log(
    `whole child: bare ${fmt(b.wallMs.bare, 1)} ms, devexit loaded ${fmt(b.wallMs.nativeLoaded, 1)} ms, ` +
      `64x4 services ${fmt(b.wallMs.services64x4, 1)} ms (x${fmt(b.wallServicesOverBare, 3)} of bare, ` +
      `x${fmt(b.wallServicesOverLoaded, 3)} of loaded; median of ${runs})`,
  );
}

// 3. Parallel close: 8 devices whose close takes 100 ms each.
{
  const code = `const fx = require('@devexit/standins').loadFixture();
    const { native } = require('@devexit/native');
    for (let d = 0; d < 8; d++) fx.registerIdle('slow', d, 'queue', 100);
    const one = 'x'; fx.registerIdle('slow1', 0, 'queue', 100);
    const t = process.hrtime.bigint(); native.closeAll('bench', false);
    process.stdout.write(String(Number(process.hrtime.bigint() - t) / 1e6));`;
  const ms = [];
  for (let i = 0; i < (quick ? 3 : 7); i++) ms.push(Number(child(code).stdout));
  const b = { closeMs: median(ms), sequentialWouldBeMs: 900 };
  b.overOneClose = b.closeMs / 100;
  results.benches.parallelClose = b;
  console.log(
    `parallel close: 9 closes of 100 ms on 9 devices in ${fmt(b.closeMs, 1)} ms ` +
      `(x${fmt(b.overOneClose, 2)} of one close; sequential would be ~900 ms)`,
  );
}

// 4. Registration cost per key: flat from 1k to 100k keys means O(1).
{
  const perKey = {};
  for (const n of [1_000, 10_000, 100_000]) {
    const code = `const fx = require('@devexit/standins').loadFixture();
      process.stdout.write(String(fx.registerMany('reg', ${n}) / ${n}));`;
    const xs = [];
    for (let i = 0; i < (quick ? 2 : 5); i++) xs.push(Number(child(code).stdout));
    perKey[n] = median(xs);
  }
  const b = { nsPerKey: perKey, ratio100kTo1k: perKey[100000] / perKey[1000] };
  results.benches.registration = b;
  console.log(
    `registration: ${fmt(perKey[1000], 0)} ns/key at 1k, ${fmt(perKey[10000], 0)} at 10k, ` +
      `${fmt(perKey[100000], 0)} at 100k (100k/1k = ${fmt(b.ratio100kTo1k, 2)})`,
  );
}

// 5. Load time: the addon alone (process.dlopen: the .init_array guard and module init) next to
// another node-addon-api addon without them (the stand-in fixture: what loading any addon
// costs here), and the whole package through require() (with @devexit/core's JS).
{
  const path = (pkg, file) =>
    `require('node:path').join(require.resolve('${pkg}/package.json'), '..', 'build', 'Release', '${file}')`;
  const time = (setup, what) =>
    `require('node:worker_threads'); const p = ${setup}; const t = process.hrtime.bigint(); ${what};
     process.stdout.write(String(Number(process.hrtime.bigint() - t) / 1e6));`;
  const alone = [];
  const other = [];
  const whole = [];
  for (let i = 0; i < (quick ? 5 : 20); i++) {
    alone.push(
      Number(
        child(time(path('@devexit/native', 'devexit_native.node'), 'process.dlopen({ exports: {} }, p)'))
          .stdout,
      ),
    );
    other.push(
      Number(
        child(time(path('@devexit/standins', 'exit_fixture.node'), 'process.dlopen({ exports: {} }, p)'))
          .stdout,
      ),
    );
    whole.push(Number(child(time('0', "require('@devexit/native')")).stdout));
  }
  const b = { addonMs: median(alone), otherAddonMs: median(other), packageMs: median(whole) };
  b.addonOverOther = b.addonMs / b.otherAddonMs;
  results.benches.load = b;
  console.log(
    `load: devexit_native.node ${fmt(b.addonMs)} ms vs another addon ${fmt(b.otherAddonMs)} ms ` +
      `(x${fmt(b.addonOverOther)}); require('@devexit/native') with core ${fmt(b.packageMs)} ms (median of ${alone.length})`,
  );
}

const out = join(here, 'bench-results');
mkdirSync(out, { recursive: true });
writeFileSync(join(out, 'latest.json'), `${JSON.stringify(results, null, 2)}\n`);
console.log(`wrote ${join(out, 'latest.json')}`);
