import { existsSync } from 'node:fs';
import { join } from 'node:path';

export interface AddonSpec {
  /** The addon's file name without `.node` (`devexit_cpu`). */
  name: string;
  /** The package's root directory (the one holding package.json). */
  packageDir: string;
  /** The environment variable that overrides the path (`DEVEXIT_CPU_ADDON`). */
  envVar: string;
  /** How users build it from source, for the error message. */
  buildHint?: string;
}

/** The platform tag of prebuilt binaries: linux-x64-glibc, linux-arm64-musl, darwin-arm64, win32-x64. */
export function platformTag(): string {
  const base = `${process.platform}-${process.arch}`;
  if (process.platform !== 'linux') return base;
  const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined;
  return `${base}-${report?.header?.glibcVersionRuntime ? 'glibc' : 'musl'}`;
}

/** Where the loader looks, in order: the env override, a local build, the prebuild. */
export function addonCandidates(spec: AddonSpec): string[] {
  const file = `${spec.name}.node`;
  const override = process.env[spec.envVar];
  return [
    ...(override ? [override] : []),
    join(spec.packageDir, 'build', 'Release', file),
    join(spec.packageDir, 'build', 'Debug', file),
    join(spec.packageDir, 'prebuilds', platformTag(), file),
  ];
}

/**
 * Loads a native addon: the env override, then a local build (build/Release, build/Debug), then
 * the prebuild for this platform. A file that is missing is noted and the next one tried; a file
 * that exists but fails to load is an error (rethrown with every attempt listed). When nothing
 * loads, one message lists what was tried and how to fix it.
 */
export function loadAddon<T>(spec: AddonSpec): T {
  const tried: string[] = [];
  for (const path of addonCandidates(spec)) {
    if (!existsSync(path)) {
      tried.push(`${path}: not found`);
      continue;
    }
    try {
      return require(path) as T;
    } catch (err) {
      const e = err as Error;
      tried.push(`${path}: ${e.message.split('\n')[0]}`);
      throw new Error(loadMessage(spec, tried, `it exists but did not load`), { cause: err });
    }
  }
  throw new Error(loadMessage(spec, tried, 'no build and no prebuild for this platform'));
}

function loadMessage(spec: AddonSpec, tried: string[], what: string): string {
  return [
    `devexit: cannot load ${spec.name}.node (${what}).`,
    ...tried.map((t) => `  tried ${t}`),
    'Fixes:',
    `  - reinstall the package so that its prebuild for ${platformTag()} is present (no compiler needed)`,
    `  - or build from source: ${spec.buildHint ?? 'npm rebuild --build-from-source'} (needs python3, make and a C++17 compiler)`,
    `  - or point ${spec.envVar} at a built ${spec.name}.node`,
  ].join('\n');
}
