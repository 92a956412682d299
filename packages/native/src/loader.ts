import { closeSync, existsSync, openSync, readFileSync, readSync } from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';
import type { DevexitError } from '@devexit/core';

// @devexit/core is loaded only when a load fails (for its error class and value descriptions): a
// process that loads its addons needs none of it (issue 20: core is ~17 M instructions to load).
const core = (): typeof import('@devexit/core') => require('@devexit/core') as typeof import('@devexit/core');
// Under webpack (and ncc, built on it), a require() of a computed path is compiled into a lookup
// in the bundle that finds no file at all: Node's own require is used where webpack provides it.
declare const __non_webpack_require__: NodeJS.Require | undefined;
const nodeRequire: NodeJS.Require =
  typeof __non_webpack_require__ === 'function' ? __non_webpack_require__ : require;
const loadError = (message: string, options?: { cause: unknown }): DevexitError =>
  new (core().DevexitError)('ERR_DEVEXIT_UNAVAILABLE', message, options);

export interface AddonSpec {
  /** The addon's file name without `.node` (`devexit_cpu`). */
  name: string;
  /** The package's root directory (the one holding package.json). */
  packageDir: string;
  /** The environment variable that overrides the path (`DEVEXIT_CPU_ADDON`). */
  envVar: string;
  /**
   * The package whose per-platform packages hold the prebuilt addon: `@devexit/cpu` looks for
   * `@devexit/cpu-linux-x64-gnu`. Default: the `name` in packageDir/package.json. `false` for
   * addons that are only ever built from source (test doubles).
   */
  platformPackages?: string | false;
  /**
   * What makes a loaded file this addon and no other: the functions it must export. A file that
   * loads but lacks one (another devexit addon, another program's addon) is refused with
   * AddonMismatchError naming what was expected and what was found.
   */
  exports?: readonly string[];
  /** The ABI version the addon must export as `abiVersion`, when it has one. */
  abi?: number;
}

/**
 * The file loaded, but it is not the addon asked for (a mix-up of DEVEXIT_*_ADDON paths, a
 * stale build of another ABI). `code` ERR_DEVEXIT_UNAVAILABLE, as every load failure: the backend
 * reports itself unavailable, with `expected` and `found` saying why.
 */
export interface AddonMismatchError extends DevexitError {
  /** What was asked for: `devexit_cpu (exports probe, threads, ...)`. */
  expected: string;
  /** What the file turned out to be. */
  found: string;
}

/** One place the loader looked, and what it found there. */
export interface AddonAttempt {
  /** `env` (the override), `build` (a local build), `prebuild` (the platform package). */
  kind: 'env' | 'build' | 'prebuild';
  /** The file, or the platform package's name when it is not installed. */
  where: string;
  /** Why it was not used (undefined for the one that loaded). */
  outcome?: string;
}

export type Libc = 'glibc' | 'musl';

let libcCache: Libc | undefined;

/**
 * glibc or musl (Linux only). The fast way first: /usr/bin/ldd is a script that names glibc, or
 * musl's loader itself; the process report (a few ms) when that file says neither.
 */
export function detectLibc(): Libc {
  if (libcCache) return libcCache;
  let text = '';
  try {
    text = readFileSync('/usr/bin/ldd', 'latin1');
  } catch {}
  if (text.includes('musl')) libcCache = 'musl';
  else if (text.includes('GNU C Library') || text.includes('GLIBC')) libcCache = 'glibc';
  else {
    const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined;
    libcCache = report?.header?.glibcVersionRuntime ? 'glibc' : 'musl';
  }
  return libcCache;
}

/**
 * The platform tag of prebuilt addons, the suffix of their package names: linux-x64-gnu,
 * linux-arm64-gnu, linux-x64-musl, linux-arm64-musl, darwin-x64, darwin-arm64, win32-x64-msvc.
 */
export function platformTag(
  platform: string = process.platform,
  arch: string = process.arch,
  libc?: Libc,
): string {
  if (platform === 'linux') {
    return `linux-${arch}-${(libc ?? detectLibc()) === 'musl' ? 'musl' : 'gnu'}`;
  }
  if (platform === 'win32') return `win32-${arch}-msvc`;
  return `${platform}-${arch}`;
}

/** The name of the platform package that holds this addon's prebuild for `tag`, if it has any. */
export function platformPackageName(spec: AddonSpec, tag: string = platformTag()): string | undefined {
  if (spec.platformPackages === false) return undefined;
  const base = spec.platformPackages ?? packageName(spec.packageDir);
  return base ? `${base}-${tag}` : undefined;
}

function packageName(dir: string): string | undefined {
  try {
    return (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string }).name;
  } catch {
    return undefined;
  }
}

function localBuilds(spec: AddonSpec): AddonAttempt[] {
  const file = `${spec.name}.node`;
  return [
    { kind: 'build', where: join(spec.packageDir, 'build', 'Release', file) },
    { kind: 'build', where: join(spec.packageDir, 'build', 'Debug', file) },
  ];
}

/**
 * The platform package's directory where an install puts it, found without a resolve: in the main
 * package's own node_modules, else beside it (npm's hoisting and pnpm's virtual store put it in the
 * node_modules holding the main package). The first two places Node's resolution from the main
 * package looks; undefined where it is in neither.
 */
function installedBeside(packageDir: string, pkg: string, file: string): string | undefined {
  const scoped = pkg.startsWith('@');
  let top = dirname(packageDir);
  if (scoped) {
    if (basename(top) !== pkg.slice(0, pkg.indexOf('/'))) return undefined;
    top = dirname(top);
  }
  const places = [join(packageDir, 'node_modules')];
  if (basename(top) === 'node_modules') places.push(top);
  for (const modules of places) {
    const where = join(modules, pkg, file);
    if (existsSync(where)) return where;
  }
  return undefined;
}

function prebuild(spec: AddonSpec): AddonAttempt[] {
  const pkg = platformPackageName(spec);
  if (!pkg) return [];
  const beside = installedBeside(spec.packageDir, pkg, `${spec.name}.node`);
  if (beside) return [{ kind: 'prebuild', where: beside }];
  try {
    // From the main package's directory: npm hoists the platform package, pnpm links it next to
    // the main package in its virtual store.
    const manifest = nodeRequire.resolve(`${pkg}/package.json`, { paths: [spec.packageDir] });
    return [{ kind: 'prebuild', where: join(dirname(manifest), `${spec.name}.node`) }];
  } catch (err) {
    const code = (err as { code?: string }).code;
    return [{ kind: 'prebuild', where: pkg, outcome: `not installed${code ? ` (${code})` : ''}` }];
  }
}

/**
 * The path the addon's variable names, trimmed as every DEVEXIT_* value is; blank is unset (the
 * local build and the prebuild are tried then).
 */
function envOverride(spec: AddonSpec): string | undefined {
  return process.env[spec.envVar]?.trim() || undefined;
}

/**
 * Where the addon may be, in the order the loader tries: the env override (when set, the only
 * candidate), else the local builds, then the prebuild in the platform package.
 */
export function addonCandidates(spec: AddonSpec): AddonAttempt[] {
  const override = envOverride(spec);
  if (override) return [{ kind: 'env', where: override }];
  return [...localBuilds(spec), ...prebuild(spec)];
}

// Shared by every copy of this module in the realm (dist/index.js holds one, dist/loader.js the
// other), so loadedAddons() sees devexit_native.node too.
const LOADED = Symbol.for('devexit.loadedAddons');
const shared = globalThis as { [LOADED]?: Map<string, string> };
shared[LOADED] ??= new Map();
const loaded: Map<string, string> = shared[LOADED];

/** The file each addon loaded in this realm came from, by addon name. */
export function loadedAddons(): Record<string, string> {
  return Object.fromEntries(loaded);
}

/**
 * Loads a native addon: the env override (when set, the only candidate), else a local build
 * (build/Release, build/Debug), else the prebuild from the platform package. A missing file is
 * noted and the next one tried; a file that exists but fails to load is rethrown with what was
 * tried. When nothing loads, one error lists every attempt and the fixes. Errors are
 * `DevexitError` with code `ERR_DEVEXIT_UNAVAILABLE`; a load failure keeps its `cause`.
 */
export function loadAddon<T>(spec: AddonSpec): T {
  const override = envOverride(spec);
  const attempts: AddonAttempt[] = override ? [{ kind: 'env', where: override }] : localBuilds(spec);
  for (let i = 0; i < attempts.length; i++) {
    const attempt = attempts[i] as AddonAttempt;
    if (attempt.outcome) continue;
    if (!existsSync(attempt.where)) {
      attempt.outcome = 'not found';
      // The platform package is looked up (libc detection, a resolve) only when no local build is there.
      if (!override && i === attempts.length - 1 && attempt.kind === 'build')
        attempts.push(...prebuild(spec));
      continue;
    }
    // What is not named .node is never required (require() would run it as JavaScript); whether the
    // file is a shared object at all is read only when it fails to load (a clearer message than dlopen's).
    const refused = refuseName(attempt.where);
    if (refused) {
      attempt.outcome = refused;
      throw loadError(loadMessage(spec, attempts, `${named(attempt)} ${refused}`));
    }
    let addon: T;
    try {
      addon = nodeRequire(attempt.where) as T;
    } catch (err) {
      const notObject = refuseContent(attempt.where);
      if (notObject) {
        attempt.outcome = notObject;
        throw loadError(loadMessage(spec, attempts, `${named(attempt)} ${notObject}`));
      }
      const why = (err as Error).message.split('\n')[0];
      attempt.outcome = `exists but did not load: ${why}`;
      throw loadError(loadMessage(spec, attempts, `${named(attempt)} exists but did not load: ${why}`), {
        cause: err,
      });
    }
    const mismatch = identify(spec, addon, attempt.where);
    if (mismatch) {
      attempt.outcome = `not ${spec.name}: ${mismatch.found}`;
      const err = loadError(
        loadMessage(
          spec,
          attempts,
          `${named(attempt)} is not ${spec.name}: expected ${mismatch.expected}; found ${mismatch.found}`,
        ),
      ) as AddonMismatchError;
      err.expected = mismatch.expected;
      err.found = mismatch.found;
      throw err;
    }
    loaded.set(spec.name, attempt.where);
    return addon;
  }
  throw loadError(loadMessage(spec, attempts, notFound(spec)));
}

/** A path in a message: the user's (the env override) cut to about 80 characters. */
function named(attempt: AddonAttempt): string {
  return attempt.kind === 'env' ? shown(attempt.where) : attempt.where;
}

function shown(path: string): string {
  return path.length <= 80 ? path : `${path.slice(0, 79)}\u2026 (${path.length} characters)`;
}

// The first bytes of the shared objects Node can dlopen: ELF, Mach-O (32/64-bit, fat, both byte
// orders), PE.
const MAGIC = [
  [0x7f, 0x45, 0x4c, 0x46],
  [0xfe, 0xed, 0xfa, 0xce],
  [0xfe, 0xed, 0xfa, 0xcf],
  [0xce, 0xfa, 0xed, 0xfe],
  [0xcf, 0xfa, 0xed, 0xfe],
  [0xca, 0xfe, 0xba, 0xbe],
  [0x4d, 0x5a],
];

/**
 * Why a file is not required at all, or undefined: require() runs anything that is not named .node
 * as JavaScript (DEVEXIT_CPU_ADDON=/etc/passwd would be evaluated).
 */
function refuseName(file: string): string | undefined {
  if (file.includes('\0')) return 'is not a path (it holds a NUL character)';
  if (extname(file) !== '.node') return 'is not a .node file (an addon is loaded only from a .node file)';
  return undefined;
}

/** Why a .node file that failed to load is not a shared object at all, or undefined. */
function refuseContent(file: string): string | undefined {
  const head = Buffer.alloc(4);
  let n = 0;
  let fd = -1;
  try {
    fd = openSync(file, 'r');
    n = readSync(fd, head, 0, 4, 0);
  } catch (err) {
    return `cannot be read (${(err as { code?: string }).code ?? (err as Error).message})`;
  } finally {
    if (fd >= 0) closeSync(fd);
  }
  const isObject = MAGIC.some((m) => m.length <= n && m.every((b, i) => head[i] === b));
  return isObject ? undefined : 'is not a shared object (no ELF, Mach-O or PE header)';
}

/** Whether `addon` is the addon `spec` asks for; when not, what was expected and found. */
function identify(
  spec: AddonSpec,
  addon: unknown,
  file: string,
): { expected: string; found: string } | undefined {
  const wanted = spec.exports ?? [];
  const expected = `${spec.name}${spec.abi !== undefined ? ` ABI ${spec.abi}` : ''}${
    wanted.length ? ` (exports ${wanted.join(', ')})` : ''
  }`;
  const what = basename(file);
  if (typeof addon !== 'object' || addon === null)
    return { expected, found: `${what} exporting ${typeof addon}` };
  const exports = addon as Record<string, unknown>;
  const name = exports.addonName;
  if (typeof name === 'string' && name !== spec.name)
    return { expected, found: `${core().describeValue(name)} (${what})` };
  if (spec.abi !== undefined && exports.abiVersion !== spec.abi) {
    return { expected, found: `${what} with ABI ${core().describeValue(exports.abiVersion)}` };
  }
  const missing = wanted.filter((k) => typeof exports[k] !== 'function');
  if (missing.length) return { expected, found: `${what}, which lacks ${missing.join(', ')}` };
  return undefined;
}

function notFound(spec: AddonSpec): string {
  return envOverride(spec) ? `${spec.envVar} names a file that does not exist` : 'not found';
}

const LABEL: Record<AddonAttempt['kind'], string> = {
  env: 'env override',
  build: 'local build',
  prebuild: 'prebuild',
};

function loadMessage(spec: AddonSpec, attempts: AddonAttempt[], what: string): string {
  const tag = platformTag();
  const pkg = platformPackageName(spec, tag);
  const found = packageName(spec.packageDir);
  // Bundled (esbuild, webpack, ncc): this code runs from the bundle's folder, not from its
  // package's, and a package.json there is the application's. It is never named as the owner.
  const bundled = typeof spec.platformPackages === 'string' && found !== spec.platformPackages;
  const owner = bundled ? (spec.platformPackages as string) : (found ?? spec.packageDir);
  const lines = [`devexit: cannot load ${spec.name}.node: ${what}.`];
  for (const a of attempts) {
    const where = a.kind === 'env' ? `${spec.envVar}=${shown(a.where)}` : a.where;
    lines.push(`  tried ${LABEL[a.kind]} ${where}: ${a.outcome ?? 'not reached'}`);
  }
  lines.push('Fixes:');
  if (bundled) {
    lines.push(
      `  - this code of ${owner} runs from ${shown(spec.packageDir)}, not from its package: it looks bundled ` +
        '(esbuild, webpack, ncc). Its addon is found beside its package: keep @devexit/* out of the bundle ' +
        "(esbuild --external:'@devexit/*', webpack externals, ncc -e for each) and ship node_modules with it",
    );
  }
  if (/\b(GLIBC|GLIBCXX|CXXABI)_[\d.]+' not found/.test(what)) {
    lines.push(
      '  - the linux-*-gnu prebuilds are built on Debian 12: they need glibc >= 2.34 and the libstdc++ ' +
        'of GCC >= 12 (GLIBCXX_3.4.30); on an older system build from source (below)',
    );
  }
  if (envOverride(spec)) {
    lines.push(`  - point ${spec.envVar} at a built ${spec.name}.node, or unset it`);
  }
  if (pkg) {
    lines.push(
      `  - install the prebuild for this platform (${tag}): ${pkg}, an optional dependency of ${owner}; ` +
        'reinstall without --omit=optional / --no-optional, and on the machine that runs the code ' +
        '(a lockfile or node_modules made on another platform lacks it)',
    );
  }
  lines.push(
    `  - or build from source: npx devexit-build ${owner} (from @devexit/native; needs python3, make, ` +
      'a C++17 compiler, node-gyp and node-addon-api)',
  );
  if (!envOverride(spec)) lines.push(`  - or point ${spec.envVar} at a built ${spec.name}.node`);
  return lines.join('\n');
}
