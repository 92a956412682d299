#!/usr/bin/env node
// devexit-build: builds devexit addons from source, on request. Installing devexit never
// compiles anything (the addons come prebuilt in per-platform packages); this is the explicit
// command for platforms without a prebuild, or for a build of one's own. The build lands in the
// package's build/Release, which the loader prefers over the prebuild.
//
// Plain JS (not built from src/): the workspace builds the addons with it before any TS build.
const { spawnSync } = require('node:child_process');
const {
  copyFileSync,
  existsSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
} = require('node:fs');
const { delimiter, dirname, join, resolve } = require('node:path');

const USAGE = `usage: devexit-build [options] [package ...]

Builds the native addons of installed devexit packages from source, into each package's
build/Release (where devexit's loader looks before the prebuilt platform package).

  package         @devexit/cpu, a package name resolved from the current directory, or a
                  package directory; none: every devexit package with an addon that is
                  installed here (@devexit/native, @devexit/cpu, @devexit/hip, ...)
  --if-needed     only packages whose addon has neither a local build nor an installed
                  prebuild for this platform (all of them when npm_config_build_from_source
                  is true, as \`npm install --build-from-source\` sets it for scripts)
  --clean         remove the local builds instead (the prebuild is used again)
  --verbose       show node-gyp's output as it builds (else only when a build fails;
                  DEVEXIT_BUILD_VERBOSE=1 does the same)
  -h, --help      this text

Needs python3, make and a C++17 compiler, node-gyp (a local install, else npm's own) and
node-addon-api (\`npm install --save-dev node-gyp node-addon-api\`). Builds against the running
Node's headers when they are installed next to it, else node-gyp downloads them.`;

/** The first of `names` found in a PATH directory, or undefined. */
function onPath(names, path = process.env.PATH || '') {
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    for (const name of names) {
      const file = join(dir, name);
      try {
        if (statSync(file).isFile()) return file;
      } catch {}
    }
  }
  return undefined;
}

function resolveFrom(request, dirs) {
  try {
    return require.resolve(request, { paths: dirs });
  } catch {
    return undefined;
  }
}

/** node-gyp's entry script: a local install, the one npm or pnpm runs scripts with, npm's own. */
function findNodeGyp(dirs) {
  const local = resolveFrom('node-gyp/bin/node-gyp.js', dirs);
  if (local) return local;
  const fromScript = process.env.npm_config_node_gyp;
  if (fromScript?.endsWith('.js') && existsSync(fromScript)) return fromScript;
  const prefix = dirname(dirname(process.execPath));
  for (const npm of [
    join(prefix, 'lib', 'node_modules', 'npm'),
    join(dirname(process.execPath), 'node_modules', 'npm'),
  ]) {
    const file = join(npm, 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
    if (existsSync(file)) return file;
  }
  return undefined;
}

/** The node_modules directory that holds node-addon-api (for NODE_PATH), or undefined. */
function findNodeAddonApi(dirs) {
  const manifest = resolveFrom('node-addon-api/package.json', dirs);
  return manifest ? dirname(dirname(manifest)) : undefined;
}

/** What a source build needs and does not find here, one line each. */
function missingTools(env) {
  if (process.platform === 'win32') return [];
  const missing = [];
  const python = env.npm_config_python || env.PYTHON;
  if (!(python && existsSync(python)) && !onPath(['python3', 'python'], env.PATH)) missing.push('python3');
  if (!onPath(['make'], env.PATH)) missing.push('make');
  const cxx = env.CXX && (existsSync(env.CXX) || onPath([env.CXX], env.PATH));
  if (!cxx && !onPath(['c++', 'g++', 'clang++'], env.PATH))
    missing.push('a C++17 compiler (c++, g++ or clang++; or CXX)');
  return missing;
}

/** node-gyp arguments that select the running Node's own headers when they are installed. */
function headerArgs(env) {
  if (env.npm_config_nodedir) return [];
  const prefix = dirname(dirname(process.execPath));
  return existsSync(join(prefix, 'include', 'node', 'node_api.h')) ? [`--nodedir=${prefix}`] : [];
}

function readManifest(dir) {
  return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
}

/**
 * The gyp file of a package. devexit packages keep it as build-from-source.gyp, in the repository
 * and in the tarball: a file named binding.gyp at a package's root makes npm and pnpm run
 * `node-gyp rebuild` at install (pnpm even with "gypfile": false, and in a workspace too).
 */
function gypFile(dir) {
  if (existsSync(join(dir, 'build-from-source.gyp'))) return 'build-from-source.gyp';
  if (existsSync(join(dir, 'binding.gyp'))) return 'binding.gyp';
  return undefined;
}

/**
 * Builds one package's addon(s) with node-gyp configure + build (no clean step: a build never
 * removes an addon another process has loaded, and unchanged objects are reused). node-gyp only
 * reads binding.gyp: build-from-source.gyp is copied to it for the build (configure and make
 * both read it), then removed. Returns the exit status; nothing is written when a prerequisite
 * is missing. node-gyp's own output (hundreds of `gyp info` lines) is kept back and shown only
 * when a step fails, unless `options.verbose` (or DEVEXIT_BUILD_VERBOSE=1) streams it.
 */
function buildPackage(dir, options = {}) {
  const log = options.log || ((line) => process.stderr.write(`${line}\n`));
  const env = { ...process.env, ...options.env };
  const gyp = gypFile(dir);
  if (!gyp) {
    log(`devexit-build: ${dir} has no build-from-source.gyp: not a devexit addon package`);
    return 1;
  }
  const dirs = [process.cwd(), dir, __dirname];
  const nodeGyp = options.nodeGyp || findNodeGyp(dirs);
  const addonApi = findNodeAddonApi(dirs);
  const missing = missingTools(env);
  if (!nodeGyp) missing.push('node-gyp (npm install --save-dev node-gyp)');
  if (!addonApi) missing.push('node-addon-api (npm install --save-dev node-addon-api)');
  if (missing.length) {
    log(`devexit-build: cannot build ${dir}: missing ${missing.join(', ')}`);
    return 1;
  }
  // gyp's command expansions (require('@devexit/native/gyp'), ...) run in fresh node processes.
  env.NODE_PATH = [addonApi, env.NODE_PATH].filter(Boolean).join(delimiter);
  const extra = headerArgs(env);
  const verbose = options.verbose ?? /^(1|true|yes|on)$/i.test(env.DEVEXIT_BUILD_VERBOSE || '');
  const generated = gyp === 'build-from-source.gyp' ? join(dir, 'binding.gyp') : undefined;
  if (generated) copyFileSync(join(dir, gyp), generated);
  try {
    for (const step of [
      ['configure', ...extra],
      ['build', '--jobs=max', ...extra],
    ]) {
      const r = spawnSync(process.execPath, [nodeGyp, ...step], {
        cwd: dir,
        env,
        stdio: verbose ? 'inherit' : ['ignore', 'pipe', 'pipe'],
        maxBuffer: 256 * 1024 * 1024,
      });
      if (r.status !== 0) {
        if (!verbose) {
          // Interleaved as written is lost; compiler errors are on stderr, read last.
          process.stderr.write(r.stdout || '');
          process.stderr.write(r.stderr || '');
          if (r.error) log(`devexit-build: node-gyp ${step[0]} could not run: ${r.error.message}`);
        }
        log(`devexit-build: node-gyp ${step[0]} failed in ${dir} (exit ${r.status ?? r.signal})`);
        return r.status ?? 1;
      }
    }
  } finally {
    if (generated) rmSync(generated, { force: true });
  }
  return 0;
}

/** A package directory from a name (resolved from `from`) or a path. */
function packageDir(spec, from) {
  const asPath = resolve(from, spec);
  if (existsSync(join(asPath, 'package.json'))) return realpathSync(asPath);
  const manifest = resolveFrom(`${spec}/package.json`, [from]);
  return manifest ? realpathSync(dirname(manifest)) : undefined;
}

/**
 * Every devexit package with an addon installed for the project at `from`: its node_modules/@devexit,
 * and the @devexit folders next to those packages (pnpm keeps a package's dependencies there).
 */
function installedAddonPackages(from) {
  const found = new Map();
  const scopes = [join(from, 'node_modules', '@devexit')];
  for (let i = 0; i < scopes.length; i++) {
    let names = [];
    try {
      names = readdirSync(scopes[i]);
    } catch {
      continue;
    }
    for (const name of names) {
      let dir;
      try {
        dir = realpathSync(join(scopes[i], name));
      } catch {
        continue;
      }
      if (found.has(dir) || !existsSync(join(dir, 'package.json'))) continue;
      found.set(dir, gypFile(dir) !== undefined);
      const scope = dirname(dir);
      if (!scopes.includes(scope)) scopes.push(scope);
    }
  }
  const dirs = [...found].filter(([, addon]) => addon).map(([dir]) => dir);
  // The registry first: the others' builds read its gyp settings (not its binary).
  return dirs.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

function rank(dir) {
  return readManifest(dir).name === '@devexit/native' ? 0 : 1;
}

/** What a build leaves: an addon, or a shared library (the repository's stand-in runtimes). */
const BUILT = /\.node$|\.so(\.\d+)*$/;

/** Whether a package's addon is there without building: a local build or the installed prebuild. */
function hasAddon(dir) {
  for (const kind of ['Release', 'Debug']) {
    try {
      if (readdirSync(join(dir, 'build', kind)).some((f) => BUILT.test(f))) return true;
    } catch {}
  }
  try {
    const { platformPackageName } = require('./dist/loader.js');
    const pkg = platformPackageName({ name: '', packageDir: dir, envVar: '' });
    const manifest = pkg && resolveFrom(`${pkg}/package.json`, [dir]);
    return Boolean(manifest && readdirSync(dirname(manifest)).some((f) => f.endsWith('.node')));
  } catch {
    return false;
  }
}

function main(argv) {
  const flags = new Set(argv.filter((a) => a.startsWith('-')));
  const specs = argv.filter((a) => !a.startsWith('-'));
  for (const f of flags) {
    if (!['--if-needed', '--clean', '--verbose', '-h', '--help'].includes(f)) {
      process.stderr.write(`devexit-build: unknown option ${f}\n\n${USAGE}\n`);
      return 2;
    }
  }
  if (flags.has('-h') || flags.has('--help')) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const cwd = process.cwd();
  const dirs = [];
  for (const spec of specs) {
    const dir = packageDir(spec, cwd);
    if (!dir) {
      process.stderr.write(`devexit-build: ${spec} is not installed here (resolved from ${cwd})\n`);
      return 1;
    }
    if (!gypFile(dir)) {
      process.stderr.write(`devexit-build: ${spec} (${dir}) has no addon to build\n`);
      return 1;
    }
    dirs.push(dir);
  }
  if (!specs.length) dirs.push(...installedAddonPackages(cwd));
  if (!dirs.length) {
    process.stderr.write(`devexit-build: no devexit package with an addon is installed in ${cwd}\n`);
    return 1;
  }
  if (flags.has('--clean')) {
    for (const dir of dirs) {
      rmSync(join(dir, 'build'), { recursive: true, force: true });
      process.stdout.write(`removed the local build of ${readManifest(dir).name} (${dir})\n`);
    }
    return 0;
  }
  const force = /^(1|true)$/i.test(process.env.npm_config_build_from_source || '');
  for (const dir of dirs) {
    const name = readManifest(dir).name;
    if (flags.has('--if-needed') && !force && hasAddon(dir)) {
      process.stdout.write(`${name}: prebuilt or already built, skipped\n`);
      continue;
    }
    process.stderr.write(`devexit-build: building ${name} in ${dir}\n`);
    const status = buildPackage(dir, flags.has('--verbose') ? { verbose: true } : {});
    if (status !== 0) return status;
    process.stdout.write(`${name}: built into ${join(dir, 'build', 'Release')}\n`);
  }
  return 0;
}

module.exports = { buildPackage, findNodeGyp, installedAddonPackages, missingTools };

if (require.main === module) process.exitCode = main(process.argv.slice(2));
