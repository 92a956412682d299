#!/usr/bin/env node
// The tarball install test (CI, after the tests): what a user gets from the registry, installed
// with npm and with pnpm on a machine with no compiler.
//
// Packs every publishable package (the platform packages with their prebuilt addons staged),
// then, in fresh projects outside the workspace, with a HOME whose .npmrc is empty (no nodedir)
// and a PATH that holds node, npm, npx, pnpm and sh but no cc, gcc, g++, c++, make or python3,
// installs (a) @devexit/core + native + cpu, (b) + wgpu, (c) + hip and cuda, (d) + cli, each @devexit/*
// package from its tarball (overrides), the rest (webgpu, typescript, @types/node) from the
// registry. After each step: no install script of ours ran (npm shows every script it runs with
// --foreground-scripts; pnpm reports ignored builds), nothing was built (no build/ directory, no
// binding.gyp), the prebuilt addons came from the platform packages, a CommonJS app and an ESM
// app launch a kernel and exit 0 (and print the wgpu/hip/cuda probes), and a strict TypeScript
// consumer (skipLibCheck false) compiles with NodeNext and with bundler resolution, under
// TypeScript 5.9 and TypeScript 7 (the native compiler, npm `typescript@7`, whose DOM lib declares
// WebGPU names of its own), and its NodeNext build runs. Step (a) also runs `npm rebuild` / `pnpm rebuild` and `devexit-build`
// (which must refuse cleanly: no compiler); step (d) runs `devexit doctor --json`. Prints a
// table; exit 1 on any failure.
//
//   node tooling/scripts/install-test.mjs [--pm npm|pnpm] [--keep] [--no-build]
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { addons, platformDir, platformName, readJson, root } from './addons.mjs';
import { formatTable, lastJson, pool, run, runAsync } from './install-test/run.mjs';

const { values: opts } = parseArgs({
  options: {
    pm: { type: 'string', multiple: true },
    keep: { type: 'boolean', default: false },
    'no-build': { type: 'boolean', default: false },
  },
});
const managers = opts.pm ?? ['npm', 'pnpm'];
const PNPM = 'pnpm@12.4.2';
const TYPESCRIPT = '5.9.3';
const TYPESCRIPT_7 = readJson(join(root, 'package.json')).devDependencies.typescript7.replace(
  /^npm:typescript@/,
  '',
);
const TYPES_NODE = readJson(join(root, 'packages', 'core', 'package.json')).devDependencies['@types/node'];
const fixtures = join(root, 'tooling', 'scripts', 'install-test');
const started = Date.now();
const seconds = (since) => ((Date.now() - since) / 1000).toFixed(1);

/** The steps: what each adds to the project. */
const STEPS = [
  {
    id: 'a',
    label: 'core+native+cpu',
    add: ['@devexit/core', '@devexit/native', '@devexit/cpu'],
    ts: ['cpu.ts'],
  },
  { id: 'b', label: '+ wgpu', add: ['@devexit/wgpu'], ts: ['wgpu.ts'] },
  { id: 'c', label: '+ hip, cuda', add: ['@devexit/hip', '@devexit/cuda'], ts: ['hip.ts', 'cuda.ts'] },
  // The CLI beside them: doctor finds every backend through its optional peers.
  { id: 'd', label: '+ cli', add: ['@devexit/cli'], ts: ['cli.ts'], doctor: true },
];

function fail(message) {
  console.error(`install-test: ${message}`);
  process.exit(1);
}

// The pnpm of the workspace: the one running this script, else the pinned one through npx.
const workspacePnpm = process.env.npm_config_user_agent?.startsWith('pnpm/')
  ? [process.env.npm_execpath]
  : ['npx', '-y', PNPM];

// ---- 1. Build, stage the prebuilt addons, pack every publishable package.
let t = Date.now();
if (!opts['no-build']) {
  const b = run([...workspacePnpm, 'run', 'build'], { cwd: root, timeout: 900_000 });
  if (b.code !== 0) fail(`pnpm build failed:\n${b.out}`);
}
const staged = run([process.execPath, join(root, 'tooling', 'scripts', 'prebuild.mjs')], { cwd: root });
if (staged.code !== 0) fail(`prebuild failed:\n${staged.out}`);
process.stdout.write(staged.stdout);
const buildSeconds = seconds(t);

const work = mkdtempSync(join(tmpdir(), 'devexit-install-test-'));
const packs = join(work, 'packs');
mkdirSync(packs);

function publishable() {
  const dirs = [];
  for (const parent of ['packages', 'tooling']) {
    for (const name of readdirSync(join(root, parent)).sort()) {
      const file = join(root, parent, name, 'package.json');
      if (existsSync(file) && !readJson(file).private) dirs.push(dirname(file));
    }
  }
  for (const a of addons()) for (const tag of a.platforms) dirs.push(platformDir(a, tag));
  return dirs;
}

t = Date.now();
const tarballs = {};
const tarballProblems = [];
// One destination per package (packs run in parallel), then one folder of tarballs.
const packed = await pool(publishable(), 3, async (dir) => {
  const pkg = readJson(join(dir, 'package.json'));
  const dest = mkdtempSync(join(packs, 'p-'));
  const p = await runAsync([...workspacePnpm, 'pack', '--pack-destination', dest], { cwd: dir });
  return { pkg, dest, p, tgz: readdirSync(dest).find((f) => f.endsWith('.tgz')) };
});
for (const { pkg, dest, p, tgz } of packed) {
  if (p.code !== 0 || !tgz) fail(`pnpm pack of ${pkg.name} failed:\n${p.out}`);
  tarballs[pkg.name] = join(packs, tgz);
  copyFileSync(join(dest, tgz), tarballs[pkg.name]);
  rmSync(dest, { recursive: true });
  // What a package manager would run or build at install.
  const manifest = JSON.parse(run(['tar', '-xzOf', tarballs[pkg.name], 'package/package.json']).stdout);
  const files = run(['tar', '-tzf', tarballs[pkg.name]]).stdout.split('\n');
  for (const s of ['preinstall', 'install', 'postinstall']) {
    if (manifest.scripts?.[s]) tarballProblems.push(`${pkg.name}: a ${s} script`);
  }
  if (files.includes('package/binding.gyp')) tarballProblems.push(`${pkg.name}: binding.gyp at its root`);
  if (manifest.gypfile === true) tarballProblems.push(`${pkg.name}: gypfile true`);
}
for (const a of addons()) {
  for (const tag of a.platforms) {
    const files = run(['tar', '-tzf', tarballs[platformName(a, tag)]]).stdout.split('\n');
    if (!files.includes(`package/${a.addon}.node`))
      tarballProblems.push(`${platformName(a, tag)}: no ${a.addon}.node`);
  }
}
if (tarballProblems.length) fail(`tarballs:\n  ${tarballProblems.join('\n  ')}`);
const packSeconds = seconds(t);
console.log(
  `packed ${Object.keys(tarballs).length} packages in ${packSeconds} s (build and staging ${buildSeconds} s)`,
);

// ---- 2. A user's machine: empty npm config, no compiler, no python on PATH.
const home = join(work, 'home');
const bin = join(work, 'bin');
mkdirSync(home);
mkdirSync(bin);
writeFileSync(join(home, '.npmrc'), '');
const whichReal = (name) => {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir && existsSync(join(dir, name))) return join(dir, name);
  }
  return undefined;
};
for (const name of ['npm', 'npx']) {
  const real = whichReal(name);
  if (!real) fail(`${name} is not on PATH`);
  symlinkSync(real, join(bin, name));
}
symlinkSync(process.execPath, join(bin, 'node'));
// npm and npx run scripts and commands through sh.
symlinkSync(whichReal('sh') ?? '/bin/sh', join(bin, 'sh'));
// npm's cache and pnpm's store are shared with the machine (no config, only downloaded files):
// Dawn (132 MB unpacked) is fetched once per machine, not once per run.
const npmCache = run(['npm', 'config', 'get', 'cache'], { cwd: root }).stdout.trim();
const storePath = run([...workspacePnpm, 'store', 'path'], { cwd: root }).stdout.trim();
const storeDir = storePath.replace(/[\\/]v\d+$/, '');
const env = {};
for (const [k, v] of Object.entries(process.env)) {
  if (/^(npm_|pnpm_|PNPM_|NODE_OPTIONS$|NODE_PATH$|INIT_CWD$|DEVEXIT_|TURBO_|CC$|CXX$|PYTHON$)/i.test(k))
    continue;
  env[k] = v;
}
Object.assign(env, {
  HOME: home,
  PATH: bin,
  npm_config_cache: npmCache,
  npm_config_update_notifier: 'false',
});
const tools = ['cc', 'gcc', 'g++', 'c++', 'clang', 'clang++', 'make', 'python3', 'python'];
const leaked = tools.filter((name) => env.PATH.split(delimiter).some((d) => existsSync(join(d, name))));
if (leaked.length) fail(`the test PATH has ${leaked.join(', ')}`);

// pnpm as npx runs it, linked into the bin directory (npx once, not on every call).
if (managers.includes('pnpm')) {
  const v = run(['npx', '-y', PNPM, '--version'], { cwd: home, env });
  if (v.code !== 0) fail(`npx ${PNPM} failed:\n${v.out}`);
  const found = readdirSync(join(npmCache, '_npx'))
    .map((d) => join(npmCache, '_npx', d, 'node_modules', 'pnpm'))
    .find(
      (d) =>
        existsSync(join(d, 'package.json')) &&
        readJson(join(d, 'package.json')).version === PNPM.split('@')[1],
    );
  if (!found) fail(`cannot find ${PNPM} in ${npmCache}/_npx`);
  symlinkSync(join(found, readJson(join(found, 'package.json')).bin.pnpm), join(bin, 'pnpm'));
}

// ---- 3. The projects.
const rows = [];
let failures = 0;

function check(row, name, ok, detail) {
  row.checks.push({ name, ok, detail });
  if (!ok) {
    failures++;
    console.log(`  FAIL ${row.pm} ${row.step} ${name}: ${detail}`);
  }
}

/** Every installed @devexit package directory (real paths), npm's layout or pnpm's. */
function installedDevexit(project) {
  const dirs = new Set();
  const scan = (scope) => {
    if (!existsSync(scope)) return;
    for (const name of readdirSync(scope)) dirs.add(realpathSync(join(scope, name)));
  };
  scan(join(project, 'node_modules', '@devexit'));
  const store = join(project, 'node_modules', '.pnpm');
  if (existsSync(store)) for (const d of readdirSync(store)) scan(join(store, d, 'node_modules', '@devexit'));
  return [...dirs];
}

function staticChecks(row, project, installed) {
  const problems = [];
  for (const dir of installedDevexit(project)) {
    const pkg = readJson(join(dir, 'package.json'));
    if (existsSync(join(dir, 'build'))) problems.push(`${pkg.name} has a build/ directory`);
    if (existsSync(join(dir, 'binding.gyp'))) problems.push(`${pkg.name} has a binding.gyp`);
    for (const s of ['preinstall', 'install', 'postinstall'])
      if (pkg.scripts?.[s]) problems.push(`${pkg.name} has ${s}`);
  }
  check(row, 'nothing built', problems.length === 0, problems.join('; '));
  // The platform package of each installed addon package, found the way the loader finds it.
  const missing = [];
  for (const a of addons()) {
    if (!installed.includes(a.pkg.name)) continue;
    const main = join(project, 'node_modules', a.pkg.name);
    for (const tag of a.platforms) {
      try {
        const m = realpathSync(join(main, 'package.json'));
        const resolved = spawnSync(
          process.execPath,
          [
            '-p',
            `require.resolve('${platformName(a, tag)}/package.json', { paths: [${JSON.stringify(dirname(m))}] })`,
          ],
          { encoding: 'utf8', env },
        );
        if (resolved.status !== 0) missing.push(platformName(a, tag));
      } catch {
        missing.push(platformName(a, tag));
      }
    }
  }
  check(row, 'platform packages', missing.length === 0, `not installed: ${missing.join(', ')}`);
}

function appChecks(row, project, installed) {
  // hip and cuda load their addon in probe(), which the apps call: every addon is listed.
  const expectAddons = addons().filter((a) => installed.includes(a.pkg.name));
  for (const app of ['app.cjs', 'app.mjs']) {
    const r = run([process.execPath, app], { cwd: project, env, timeout: 120_000 });
    const report = lastJson(r.stdout);
    const problems = [];
    if (r.code !== 0) problems.push(`exit ${r.code}: ${r.out.slice(-2000)}`);
    if (report?.saxpy !== 'ok') problems.push(`saxpy ${report?.saxpy}`);
    for (const a of expectAddons) {
      const from = report?.addons?.[a.addon];
      if (!from?.includes(`${platformName(a, 'linux-x64-gnu')}`))
        problems.push(`${a.addon} loaded from ${from}`);
    }
    for (const name of ['wgpu', 'hip', 'cuda']) {
      if (!installed.includes(`@devexit/${name}`)) continue;
      const p = report?.[name];
      if (typeof p?.available !== 'boolean' || (!p.available && !p.reason))
        problems.push(`${name} probe: ${JSON.stringify(p)}`);
      else
        row.probes[name] = p.available
          ? `available (${p.devices} device(s))`
          : `unavailable: ${p.reason.split('\n')[0]}`;
    }
    check(row, app === 'app.cjs' ? 'cjs' : 'esm', problems.length === 0, problems.join('; '));
  }
  if (installed.includes('@devexit/native')) {
    const r = run([process.execPath, 'subpaths.mjs'], { cwd: project, env, timeout: 60_000 });
    const report = lastJson(r.stdout);
    check(
      row,
      'native subpaths',
      r.code === 0 && report?.problems?.length === 0,
      `exit ${r.code}: ${r.out.slice(-2000)}`,
    );
  }
}

async function tsChecks(row, project, files) {
  // The default lib of the target (DOM included): the consumer's own WebGPU types (TypeScript 7's
  // DOM lib declares them) must not clash with ours. Incremental: a later step re-checks only
  // what changed (a full check of @types/node and the DOM lib takes ~8 s here).
  const base = { strict: true, skipLibCheck: false, target: 'es2022', types: ['node'], incremental: true };
  const configs = {
    nodenext: { ...base, module: 'nodenext', moduleResolution: 'nodenext', outDir: 'out' },
    bundler: { ...base, module: 'preserve', moduleResolution: 'bundler', noEmit: true },
  };
  const compilers = {
    ts59: join('node_modules', 'typescript', 'bin', 'tsc'),
    ts7: join('node_modules', 'typescript7', 'bin', 'tsc'),
  };
  const jobs = [];
  for (const [ts, tsc] of Object.entries(compilers)) {
    for (const [mode, options] of Object.entries(configs)) {
      const name = `${ts}-${mode}`;
      // TypeScript 7 checks only: the NodeNext build that runs is 5.9's.
      const compilerOptions = { ...options, tsBuildInfoFile: `${name}.tsbuildinfo` };
      if (ts === 'ts7') {
        compilerOptions.noEmit = true;
        delete compilerOptions.outDir;
      }
      writeFileSync(
        join(project, `tsconfig.${name}.json`),
        JSON.stringify({ compilerOptions, files }, null, 2),
      );
      jobs.push({ name, argv: [process.execPath, tsc, '-p', `tsconfig.${name}.json`] });
    }
  }
  const results = await pool(jobs, 2, (j) => runAsync(j.argv, { cwd: project, env }));
  jobs.forEach((j, i) => {
    const label = j.name.replace(/^ts59-/, 'ts ').replace(/^ts7-/, 'ts7 ');
    check(row, label, results[i].code === 0, results[i].out.slice(-3000));
  });
  // The NodeNext build, run: the types and the runtime agree.
  const problems = [];
  for (const f of files) {
    const r = run([process.execPath, join('out', f.replace(/\.ts$/, '.js'))], {
      cwd: project,
      env,
      timeout: 120_000,
    });
    if (r.code !== 0 || !lastJson(r.stdout)) problems.push(`${f}: exit ${r.code} ${r.out.slice(-1500)}`);
  }
  check(row, 'ts run', problems.length === 0, problems.join('; '));
}

function doctorCheck(row, pm, project) {
  const argv = pm === 'npm' ? ['npx', '--no-install', 'devexit'] : ['pnpm', 'exec', 'devexit'];
  const r = run([...argv, 'doctor', '--json'], { cwd: project, env, timeout: 120_000 });
  let report;
  try {
    report = JSON.parse(r.stdout);
  } catch {}
  const problems = [];
  if (r.code !== 0) problems.push(`exit ${r.code}`);
  if (report?.native?.loaded !== true) problems.push(`native ${JSON.stringify(report?.native)}`);
  const byName = Object.fromEntries((report?.backends ?? []).map((b) => [b.name, b]));
  if (byName.cpu?.available !== true) problems.push(`cpu ${JSON.stringify(byName.cpu)}`);
  for (const name of ['wgpu', 'hip', 'cuda']) {
    if (byName[name]?.installed !== true)
      problems.push(`${name} not found by the CLI: ${JSON.stringify(byName[name])}`);
  }
  check(row, 'doctor', problems.length === 0, `${problems.join('; ')}\n${r.out.slice(-2000)}`);
}

function writeProject(pm, project, deps, withWgpu) {
  const file = (name) => `file:${tarballs[name]}`;
  const overrides = Object.fromEntries(Object.keys(tarballs).map((n) => [n, file(n)]));
  const pkg = {
    name: `devexit-install-test-${pm}`,
    version: 1,
    private: true,
    type: 'module',
    dependencies: Object.fromEntries(deps.map((n) => [n, file(n)])),
    devDependencies: {
      typescript: TYPESCRIPT,
      typescript7: `npm:typescript@${TYPESCRIPT_7}`,
      '@types/node': TYPES_NODE,
    },
  };
  pkg.version = '1.0.0';
  if (pm === 'npm') pkg.overrides = overrides;
  writeFileSync(join(project, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
  if (pm === 'pnpm') {
    const lines = [`storeDir: ${JSON.stringify(storeDir)}`, 'updateNotifier: false', 'overrides:'];
    for (const [n, spec] of Object.entries(overrides))
      lines.push(`  ${JSON.stringify(n)}: ${JSON.stringify(spec)}`);
    // What a pnpm user of @devexit/wgpu declares: webgpu's postinstall only clears a macOS
    // quarantine attribute. Step (a) has no such entry: nothing of ours needs one.
    if (withWgpu) lines.push('allowBuilds:', '  webgpu: false');
    writeFileSync(join(project, 'pnpm-workspace.yaml'), `${lines.join('\n')}\n`);
  }
}

for (const pm of managers) {
  const project = join(work, `${pm}-app`);
  mkdirSync(project);
  for (const f of ['app.cjs', 'app.mjs', 'subpaths.mjs', 'cpu.ts', 'wgpu.ts', 'hip.ts', 'cuda.ts', 'cli.ts'])
    copyFileSync(join(fixtures, f), join(project, f));
  const deps = [];
  const tsFiles = [];
  for (const step of STEPS) {
    deps.push(...step.add);
    tsFiles.push(...step.ts);
    const row = { pm, step: `${step.id} ${step.label}`, checks: [], probes: {}, installSeconds: 0 };
    rows.push(row);
    writeProject(pm, project, deps, deps.includes('@devexit/wgpu'));
    // Each step adds dependencies to the project of the step before, lockfile and all: under CI=true
    // pnpm would refuse to update the lockfile (frozen by default there), as it would for a user.
    const argv =
      pm === 'npm'
        ? ['npm', 'install', '--foreground-scripts', '--no-audit', '--no-fund', '--prefer-offline']
        : ['pnpm', 'install', '--prefer-offline', '--no-frozen-lockfile'];
    const t0 = Date.now();
    const r = run(argv, { cwd: project, env, timeout: 600_000 });
    row.installSeconds = seconds(t0);
    check(row, 'install', r.code === 0, r.out.slice(-3000));
    if (r.code !== 0) break;
    if (pm === 'npm') {
      // npm prints "> name@version script" for every script it runs with --foreground-scripts,
      // and (npm 11) lists the packages with install scripts that allowScripts does not cover.
      const ours = [
        ...(r.out.match(/^> @devexit\/\S+ (preinstall|install|postinstall)$/gm) ?? []),
        ...(r.out.match(/^npm warn install-scripts +@devexit\/.*$/gm) ?? []),
      ];
      check(row, 'no scripts', ours.length === 0, ours.join('; '));
      row.others = (r.out.match(/^> (?!@devexit\/)\S+ (preinstall|install|postinstall)$/gm) ?? []).map((l) =>
        l.slice(2),
      );
    } else {
      const ignored = r.out.match(/.*(IGNORED_BUILDS|Ignored build scripts|approve-builds).*/gi) ?? [];
      check(row, 'no scripts', ignored.length === 0, ignored.join('; '));
    }
    staticChecks(row, project, deps);
    if (step.id === 'a') {
      // `npm rebuild` / `pnpm rebuild`: nothing of ours to run, nothing to approve.
      const rb = run(pm === 'npm' ? ['npm', 'rebuild', '--foreground-scripts'] : ['pnpm', 'rebuild'], {
        cwd: project,
        env,
      });
      const noisy = /^> @devexit\/|IGNORED_BUILDS|Ignored build scripts/im.test(rb.out);
      check(row, 'rebuild', rb.code === 0 && !noisy, rb.out.slice(-2000));
      // devexit-build with no compiler: a clear refusal, nothing written.
      const db = run(
        pm === 'npm'
          ? ['npx', '--no-install', 'devexit-build', '@devexit/cpu']
          : ['pnpm', 'exec', 'devexit-build', '@devexit/cpu'],
        { cwd: project, env },
      );
      const cpuDir = realpathSync(join(project, 'node_modules', '@devexit', 'cpu'));
      const clean = !existsSync(join(cpuDir, 'build')) && !existsSync(join(cpuDir, 'binding.gyp'));
      const said = /missing python3, make, a C\+\+17 compiler/.test(db.out);
      check(
        row,
        'devexit-build refuses',
        db.code === 1 && said && clean,
        `exit ${db.code}, clean ${clean}: ${db.out.slice(-1500)}`,
      );
      staticChecks(row, project, deps);
    }
    if (step.doctor) doctorCheck(row, pm, project);
    else appChecks(row, project, deps);
    await tsChecks(row, project, [...tsFiles]);
    row.seconds = seconds(t0);
  }
}

// ---- 4. The table.
console.log(`\n${formatTable(rows)}`);
console.log(
  `install-test: ${failures ? `${failures} failure(s)` : 'all passed'} in ${seconds(started)} s (${work}${opts.keep ? ', kept' : ''})`,
);
if (!opts.keep) rmSync(work, { recursive: true, force: true });
process.exitCode = failures ? 1 : 0;
