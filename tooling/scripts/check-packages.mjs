// `pnpm check:packages`: packs every publishable workspace package as pnpm publishes it (workspace:
// ranges replaced) and checks the tarball: publint --strict and arethetypeswrong report nothing,
// LICENSE (the root one) and README.md are in it, no source map, no workspace: range left, nothing
// that makes npm or pnpm run or build anything at install (no preinstall/install/postinstall
// script, no binding.gyp at the root, gypfile not true), and no script at all: the workspace's
// scripts (build, test, lint, build:native, prepack) name files the tarball does not have, and
// .pnpmfile.cjs (beforePacking) takes them out. The platform packages of the prebuilt
// addons (tooling/scripts/addons.mjs) are packed too: their .node is in them and fits the
// platform, and the main package lists each at its own version. Run after a build. Exit 1 on any
// finding.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { addons, checkBinary, platformDir, platformName } from './addons.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bin = (name) => join(root, 'node_modules', '.bin', name);
const rootPackage = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const license = readFileSync(join(root, 'LICENSE'), 'utf8');

// The pnpm running this script (pnpm sets npm_execpath), else the pinned one through npx.
const pnpm = process.env.npm_config_user_agent?.startsWith('pnpm/')
  ? [process.env.npm_execpath]
  : ['npx', '-y', rootPackage.packageManager];

function run(argv, cwd) {
  const r = spawnSync(argv[0], argv.slice(1), {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, FORCE_COLOR: '0' },
  });
  return { code: r.status ?? 1, out: `${r.stdout ?? ''}${r.stderr ?? ''}`.trim() };
}

function publishable() {
  const dirs = [];
  for (const parent of ['packages', 'tooling']) {
    for (const name of readdirSync(join(root, parent)).sort()) {
      const dir = join(root, parent, name);
      let pkg;
      try {
        pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
      } catch {
        continue;
      }
      if (!pkg.private) dirs.push({ dir, pkg });
    }
  }
  for (const a of addons()) {
    for (const tag of a.platforms) {
      const dir = platformDir(a, tag);
      dirs.push({
        dir,
        pkg: JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')),
        platform: { addon: a, tag },
      });
    }
  }
  return dirs;
}

function checkTarball(tgz, dir, pkg, platform) {
  const problems = [];
  const listing = run(['tar', '-tzf', tgz]);
  if (listing.code !== 0) return [`cannot list ${tgz}: ${listing.out}`];
  const files = listing.out.split('\n').map((f) => f.replace(/^package\//, ''));
  for (const needed of ['package.json', 'LICENSE', 'README.md']) {
    if (!files.includes(needed)) problems.push(`${needed} is not in the tarball`);
  }
  const maps = files.filter((f) => f.endsWith('.map'));
  if (maps.length) problems.push(`source maps in the tarball (rebuild from clean): ${maps.join(', ')}`);
  // The JS a program loads is ASCII: one non-ASCII character makes V8 hold that file's whole
  // source as a two-byte string (twice the memory, slower to scan) at every load; @devexit/core's
  // bundle cost 16 more page faults for one "\u2026". Write \u escapes. The CLI's glyphs are exempt.
  if (!platform && pkg.name !== '@devexit/cli') {
    for (const f of files.filter((name) => /\.[cm]?js$/.test(name))) {
      const text = run(['tar', '-xzOf', tgz, `package/${f}`]).out;
      const at = text.search(/[^\t\n\r -~]/);
      if (at >= 0) {
        const line = text.slice(0, at).split('\n').length;
        problems.push(
          `${f}:${line} holds a character outside printable ASCII (${JSON.stringify(text[at])}): write it as a \\u escape`,
        );
      }
    }
  }
  const packedLicense = run(['tar', '-xzOf', tgz, 'package/LICENSE']);
  if (packedLicense.code === 0 && packedLicense.out !== license.trim()) {
    problems.push(`${relative(root, dir)}/LICENSE differs from the root LICENSE`);
  }
  const packed = JSON.parse(run(['tar', '-xzOf', tgz, 'package/package.json']).out);
  for (const field of ['dependencies', 'peerDependencies', 'optionalDependencies']) {
    for (const [name, range] of Object.entries(packed[field] ?? {})) {
      if (String(range).startsWith('workspace:')) problems.push(`${field}.${name} is still ${range}`);
    }
  }
  const expectedDirectory = relative(root, dir);
  if (packed.repository?.directory !== expectedDirectory) {
    problems.push(`repository.directory is ${packed.repository?.directory}, expected ${expectedDirectory}`);
  }
  for (const field of ['license', 'type', 'engines']) {
    if (!packed[field]) problems.push(`no "${field}" field`);
  }

  for (const s of ['preinstall', 'install', 'postinstall']) {
    if (packed.scripts?.[s]) problems.push(`a ${s} script (pnpm refuses it without approval)`);
  }
  // Dev scripts point at what is not published (a tsconfig, vitest, ../../tooling/scripts/...).
  for (const [name, command] of Object.entries(packed.scripts ?? {})) {
    const missing = scriptFiles(command).filter((f) => !files.includes(f));
    problems.push(
      `scripts.${name} is published (${JSON.stringify(command)})${missing.length ? `, naming ${missing.join(', ')}, not in the tarball` : ''}: pack with pnpm (.pnpmfile.cjs removes scripts)`,
    );
  }
  if (files.includes('binding.gyp'))
    problems.push('binding.gyp at the root (npm and pnpm run node-gyp at install)');
  if (packed.gypfile === true) problems.push('"gypfile": true');
  for (const a of addons()) {
    if (a.pkg.name !== packed.name) continue;
    for (const tag of a.platforms) {
      const want = platformName(a, tag);
      if (packed.optionalDependencies?.[want] !== packed.version) {
        problems.push(
          `optionalDependencies.${want} is ${packed.optionalDependencies?.[want]}, not ${packed.version}`,
        );
      }
    }
  }
  if (platform) {
    const file = `${platform.addon.addon}.node`;
    if (!files.includes(file)) problems.push(`${file} is not in the tarball`);
    else {
      const extracted = join(dirname(tgz), `${packed.name.replace('/', '+')}-${file}`);
      writeFileSync(extracted, spawnSync('tar', ['-xzOf', tgz, `package/${file}`]).stdout);
      const problem = checkBinary(extracted, platform.tag);
      rmSync(extracted);
      if (problem) problems.push(problem);
    }
    if (packed.version !== platform.addon.pkg.version) {
      problems.push(`version ${packed.version}, ${platform.addon.pkg.name} is ${platform.addon.pkg.version}`);
    }
  }

  const publint = run([bin('publint'), 'run', tgz, '--strict']);
  if (publint.code !== 0 || !publint.out.includes('All good!'))
    problems.push(`publint --strict:\n${publint.out}`);

  // A platform package holds one .node and no JS or types: nothing for arethetypeswrong.
  if (platform) return problems;
  // Every resolution mode (node10, node16 from CJS and from ESM, bundler), except for ESM-only
  // packages, which are not meant for require().
  const profile = pkg.type === 'module' ? 'esm-only' : 'strict';
  // A package without an exports map (@devexit/native: see its README) has its subpaths named by
  // typesVersions; arethetypeswrong checks only "." unless told of them.
  const subpaths = pkg.exports ? [] : Object.keys(pkg.typesVersions?.['*'] ?? {});
  const entrypoints = subpaths.length ? ['--entrypoints', '.', ...subpaths, 'package.json'] : [];
  const attw = run([
    bin('attw'),
    tgz,
    '--profile',
    profile,
    '--format',
    'ascii',
    '--no-emoji',
    ...entrypoints,
  ]);
  const clean = profile === 'strict' ? attw.out.includes('No problems found') : attw.code === 0;
  if (attw.code !== 0 || !clean) {
    problems.push(`arethetypeswrong (--profile ${profile}):\n${attw.out}`);
  }
  return problems;
}

/** The package files a script command names (`node ../../x.mjs`, `tsc -p tsconfig.build.json`). */
function scriptFiles(command) {
  return String(command)
    .split(/[\s=]+/)
    .filter((t) => /^\.{0,2}\/|\.(c|m)?js$|\.json$|\.gyp$|\.sh$/.test(t))
    .map((t) => t.replace(/^\.\//, ''));
}

const out = mkdtempSync(join(tmpdir(), 'devexit-packs-'));
let failed = 0;
// The platform packages, the main packages' optionalDependencies and the changesets groups are
// generated from tooling/scripts/addons.mjs: out of date is a finding.
const sync = run([process.execPath, join(root, 'tooling', 'scripts', 'prebuild.mjs'), '--check']);
if (sync.code !== 0) {
  failed++;
  console.log(`FAIL ${sync.out}`);
}
try {
  for (const { dir, pkg, platform } of publishable()) {
    const packed = run([...pnpm, 'pack', '--pack-destination', out], dir);
    const tgz = readdirSync(out).find((f) => f.startsWith(`${pkg.name.replace('@', '').replace('/', '-')}-`));
    if (packed.code !== 0 || !tgz) {
      failed++;
      console.log(`FAIL ${pkg.name}: pack failed\n${packed.out}`);
      continue;
    }
    const problems = checkTarball(join(out, tgz), dir, pkg, platform);
    rmSync(join(out, tgz));
    if (problems.length) {
      failed++;
      console.log(`FAIL ${pkg.name}@${pkg.version}\n  ${problems.join('\n  ')}`);
    } else {
      const profile = pkg.type === 'module' ? 'esm-only' : 'strict';
      const what = platform
        ? `${platform.addon.addon}.node for ${platform.tag}`
        : `attw --profile ${profile}`;
      console.log(
        `ok   ${pkg.name}@${pkg.version}: publint --strict, ${what}, LICENSE, README, no maps, no scripts`,
      );
    }
  }
} finally {
  rmSync(out, { recursive: true, force: true });
}
if (failed) {
  console.log(`${failed} package(s) with findings`);
  process.exit(1);
}
