import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { DevexitError } from '@devexit/core';

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

function prebuild(spec: AddonSpec): AddonAttempt[] {
  const pkg = platformPackageName(spec);
  if (!pkg) return [];
  try {
    // From the main package's directory: npm hoists the platform package, pnpm links it next to
    // the main package in its virtual store.
    const manifest = require.resolve(`${pkg}/package.json`, { paths: [spec.packageDir] });
    return [{ kind: 'prebuild', where: join(dirname(manifest), `${spec.name}.node`) }];
  } catch (err) {
    const code = (err as { code?: string }).code;
    return [{ kind: 'prebuild', where: pkg, outcome: `not installed${code ? ` (${code})` : ''}` }];
  }
}

/**
 * Where the addon may be, in the order the loader tries: the env override (when set, the only
 * candidate), else the local builds, then the prebuild in the platform package.
 */
export function addonCandidates(spec: AddonSpec): AddonAttempt[] {
  const override = process.env[spec.envVar];
  if (override) return [{ kind: 'env', where: override }];
  return [...localBuilds(spec), ...prebuild(spec)];
}

const loaded = new Map<string, string>();

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
  const override = process.env[spec.envVar];
  const attempts: AddonAttempt[] = override ? [{ kind: 'env', where: override }] : localBuilds(spec);
  // The platform package is looked up (libc detection, a resolve) only when no local build loads.
  if (!override && !attempts.some((a) => existsSync(a.where))) attempts.push(...prebuild(spec));
  for (const attempt of attempts) {
    if (attempt.outcome) continue;
    if (!existsSync(attempt.where)) {
      attempt.outcome = 'not found';
      continue;
    }
    try {
      const addon = require(attempt.where) as T;
      loaded.set(spec.name, attempt.where);
      return addon;
    } catch (err) {
      const why = (err as Error).message.split('\n')[0];
      attempt.outcome = `exists but did not load: ${why}`;
      throw new DevexitError(
        'ERR_DEVEXIT_UNAVAILABLE',
        loadMessage(spec, attempts, `${attempt.where} exists but did not load: ${why}`),
        { cause: err },
      );
    }
  }
  throw new DevexitError('ERR_DEVEXIT_UNAVAILABLE', loadMessage(spec, attempts, notFound(spec)));
}

function notFound(spec: AddonSpec): string {
  return process.env[spec.envVar] ? `${spec.envVar} names a file that does not exist` : 'not found';
}

const LABEL: Record<AddonAttempt['kind'], string> = {
  env: 'env override',
  build: 'local build',
  prebuild: 'prebuild',
};

function loadMessage(spec: AddonSpec, attempts: AddonAttempt[], what: string): string {
  const tag = platformTag();
  const pkg = platformPackageName(spec, tag);
  const owner = packageName(spec.packageDir) ?? spec.packageDir;
  const lines = [`devexit: cannot load ${spec.name}.node: ${what}.`];
  for (const a of attempts) {
    const where = a.kind === 'env' ? `${spec.envVar}=${a.where}` : a.where;
    lines.push(`  tried ${LABEL[a.kind]} ${where}: ${a.outcome ?? 'not reached'}`);
  }
  lines.push('Fixes:');
  if (/\b(GLIBC|GLIBCXX|CXXABI)_[\d.]+' not found/.test(what)) {
    lines.push(
      '  - the linux-*-gnu prebuilds are built on Debian 12: they need glibc >= 2.34 and the libstdc++ ' +
        'of GCC >= 12 (GLIBCXX_3.4.30); on an older system build from source (below)',
    );
  }
  if (process.env[spec.envVar]) {
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
  if (!process.env[spec.envVar]) lines.push(`  - or point ${spec.envVar} at a built ${spec.name}.node`);
  return lines.join('\n');
}
