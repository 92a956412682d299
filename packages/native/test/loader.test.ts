import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DevexitError as DevexitErrorType } from '@devexit/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { addonCandidates, detectLibc, loadAddon, platformPackageName, platformTag } from '../src/loader.js';

// The loader takes @devexit/core's error class from Node's require, when a load fails (it does not
// load core otherwise): the class to compare with is that copy's, not the one vitest would inline.
const { DevexitError } = createRequire(join(__dirname, '..', 'src', 'loader.ts'))(
  '@devexit/core',
) as typeof import('@devexit/core');

const ENV = 'DEVEXIT_LOADER_TEST_ADDON';
const tag = platformTag();

/** A package named @devexit-test/thing in a node_modules tree, optionally with its platform package. */
function layout(options: { platform?: 'bogus' | 'empty' } = {}) {
  const root = mkdtempSync(join(tmpdir(), 'devexit-loader-'));
  const scope = join(root, 'node_modules', '@devexit-test');
  const packageDir = join(scope, 'thing');
  mkdirSync(packageDir, { recursive: true });
  writeFileSync(join(packageDir, 'package.json'), JSON.stringify({ name: '@devexit-test/thing' }));
  if (options.platform) {
    const dir = join(scope, `thing-${tag}`);
    mkdirSync(dir);
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `@devexit-test/thing-${tag}` }));
    if (options.platform === 'bogus') writeFileSync(join(dir, 'thing.node'), 'not a shared object\n');
  }
  return { root, packageDir, spec: { name: 'thing', packageDir, envVar: ENV } };
}

function thrown(fn: () => unknown): DevexitErrorType {
  try {
    fn();
  } catch (err) {
    return err as DevexitErrorType;
  }
  throw new Error('did not throw');
}

const roots: string[] = [];
beforeEach(() => {
  delete process.env[ENV];
});
afterEach(() => {
  delete process.env[ENV];
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
});

describe('platformTag', () => {
  it('names the platform packages: <platform>-<arch>, -gnu or -musl on Linux, -msvc on Windows', () => {
    expect(platformTag('linux', 'x64', 'glibc')).toBe('linux-x64-gnu');
    expect(platformTag('linux', 'arm64', 'glibc')).toBe('linux-arm64-gnu');
    expect(platformTag('linux', 'x64', 'musl')).toBe('linux-x64-musl');
    expect(platformTag('linux', 'arm64', 'musl')).toBe('linux-arm64-musl');
    expect(platformTag('darwin', 'x64')).toBe('darwin-x64');
    expect(platformTag('darwin', 'arm64')).toBe('darwin-arm64');
    expect(platformTag('win32', 'x64')).toBe('win32-x64-msvc');
  });

  it("detects this machine's libc as the process report does", () => {
    const report = process.report.getReport() as { header?: { glibcVersionRuntime?: string } };
    expect(detectLibc()).toBe(report.header?.glibcVersionRuntime ? 'glibc' : 'musl');
    expect(tag).toBe(`${process.platform}-${process.arch}-${detectLibc() === 'glibc' ? 'gnu' : 'musl'}`);
  });
});

describe('loadAddon', () => {
  it('nothing anywhere: one DevexitError listing every attempt and every fix', () => {
    const { root, packageDir, spec } = layout();
    roots.push(root);
    const err = thrown(() => loadAddon(spec));
    expect(err).toBeInstanceOf(DevexitError);
    expect(err.code).toBe('ERR_DEVEXIT_UNAVAILABLE');
    expect(err.message.split('\n')).toEqual([
      'devexit: cannot load thing.node: not found.',
      `  tried local build ${join(packageDir, 'build', 'Release', 'thing.node')}: not found`,
      `  tried local build ${join(packageDir, 'build', 'Debug', 'thing.node')}: not found`,
      `  tried prebuild @devexit-test/thing-${tag}: not installed (MODULE_NOT_FOUND)`,
      'Fixes:',
      expect.stringMatching(
        new RegExp(
          `^ {2}- install the prebuild for this platform \\(${tag}\\): @devexit-test/thing-${tag}, an optional dependency of @devexit-test/thing;`,
        ),
      ),
      expect.stringMatching(/^ {2}- or build from source: npx devexit-build @devexit-test\/thing \(/),
      `  - or point ${ENV} at a built thing.node`,
    ]);
  });

  it("bundled (the code runs from the application's folder): the message names the package, not the application, and says to keep it out of the bundle", () => {
    const root = mkdtempSync(join(tmpdir(), 'devexit-loader-'));
    roots.push(root);
    // What esbuild --bundle makes: the package's code in the app's dist/, beside the app's manifest.
    const app = join(root, 'my-app');
    mkdirSync(join(app, 'dist'), { recursive: true });
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'my-app' }));
    const spec = { name: 'thing', packageDir: app, envVar: ENV, platformPackages: '@devexit-test/thing' };
    const message = thrown(() => loadAddon(spec)).message;
    expect(message).not.toContain('dependency of my-app');
    expect(message).not.toMatch(/devexit-build my-app/);
    expect(message.split('\n').slice(4)).toEqual([
      'Fixes:',
      `  - this code of @devexit-test/thing runs from ${app}, not from its package: it looks bundled (esbuild, webpack, ncc). Its addon is found beside its package: keep @devexit/* out of the bundle (esbuild --external:'@devexit/*', webpack externals, ncc -e for each) and ship node_modules with it`,
      expect.stringMatching(
        new RegExp(
          `^ {2}- install the prebuild for this platform \\(${tag}\\): @devexit-test/thing-${tag}, an optional dependency of @devexit-test/thing;`,
        ),
      ),
      expect.stringMatching(/^ {2}- or build from source: npx devexit-build @devexit-test\/thing \(/),
      `  - or point ${ENV} at a built thing.node`,
    ]);
    // Its own package directory: not bundled, no such line.
    const { root: r2, spec: own } = layout();
    roots.push(r2);
    expect(
      thrown(() => loadAddon({ ...own, platformPackages: '@devexit-test/thing' })).message,
    ).not.toContain('bundled');
  });

  it('the platform package is resolved from the package directory, and a broken prebuild is an error, not skipped', () => {
    const { root, spec } = layout({ platform: 'bogus' });
    roots.push(root);
    const prebuilt = join(root, 'node_modules', '@devexit-test', `thing-${tag}`, 'thing.node');
    expect(addonCandidates(spec).map((a) => a.kind)).toEqual(['build', 'build', 'prebuild']);
    expect(addonCandidates(spec)[2]?.where).toBe(prebuilt);
    const err = thrown(() => loadAddon(spec));
    expect(err.code).toBe('ERR_DEVEXIT_UNAVAILABLE');
    expect(err.message.split('\n')[0]).toBe(
      `devexit: cannot load thing.node: ${prebuilt} is not a shared object (no ELF, Mach-O or PE header).`,
    );
    expect(err.message).toContain(`tried prebuild ${prebuilt}: is not a shared object`);
  });

  it("an installed platform package is found where Node would resolve it first, without a resolve: the package's own node_modules, then beside it", () => {
    const { root, packageDir, spec } = layout({ platform: 'bogus' });
    roots.push(root);
    const beside = join(root, 'node_modules', '@devexit-test', `thing-${tag}`);
    // No package.json: require.resolve(`${pkg}/package.json`) would not find it.
    rmSync(join(beside, 'package.json'));
    expect(addonCandidates(spec)[2]?.where).toBe(join(beside, 'thing.node'));
    const nested = join(packageDir, 'node_modules', '@devexit-test', `thing-${tag}`);
    mkdirSync(nested, { recursive: true });
    writeFileSync(join(nested, 'thing.node'), 'not a shared object either\n');
    expect(addonCandidates(spec)[2]?.where).toBe(join(nested, 'thing.node'));
    expect(thrown(() => loadAddon(spec)).message).toContain(
      `tried prebuild ${join(nested, 'thing.node')}: is not a shared object`,
    );
    // Outside a node_modules layout (a workspace checkout), only the resolve.
    const loose = mkdtempSync(join(tmpdir(), 'devexit-loader-'));
    roots.push(loose);
    mkdirSync(join(loose, `thing-${tag}`));
    writeFileSync(join(loose, `thing-${tag}`, 'thing.node'), 'x');
    const looseSpec = { ...spec, packageDir: join(loose, 'thing'), platformPackages: 'thing' };
    expect(addonCandidates(looseSpec)[2]?.outcome).toMatch(/^not installed/);
  });

  it('a platform package without its file: "not found", the fixes still listed', () => {
    const { root, spec } = layout({ platform: 'empty' });
    roots.push(root);
    const err = thrown(() => loadAddon(spec));
    expect(err.message).toContain(
      `tried prebuild ${join(root, 'node_modules', '@devexit-test', `thing-${tag}`, 'thing.node')}: not found`,
    );
  });

  it('a local build that exists but does not load is rethrown: the prebuild is not tried', () => {
    const { root, packageDir, spec } = layout({ platform: 'bogus' });
    roots.push(root);
    const local = join(packageDir, 'build', 'Release', 'thing.node');
    mkdirSync(join(packageDir, 'build', 'Release'), { recursive: true });
    writeFileSync(local, 'not a shared object either\n');
    const err = thrown(() => loadAddon(spec));
    expect(err.message.split('\n')[0]).toContain(`${local} is not a shared object`);
    expect(err.message).not.toContain('tried prebuild');
  });

  it('the env override is the only candidate: a wrong path is an error, the local build is not used', () => {
    const { root, packageDir, spec } = layout();
    roots.push(root);
    mkdirSync(join(packageDir, 'build', 'Release'), { recursive: true });
    writeFileSync(join(packageDir, 'build', 'Release', 'thing.node'), 'would fail to load\n');
    process.env[ENV] = join(root, 'nowhere.node');
    expect(addonCandidates(spec)).toEqual([{ kind: 'env', where: join(root, 'nowhere.node') }]);
    const err = thrown(() => loadAddon(spec));
    expect(err.message.split('\n').slice(0, 3)).toEqual([
      `devexit: cannot load thing.node: ${ENV} names a file that does not exist.`,
      `  tried env override ${ENV}=${join(root, 'nowhere.node')}: not found`,
      'Fixes:',
    ]);
    expect(err.message).toContain(`  - point ${ENV} at a built thing.node, or unset it`);
  });

  it('the env override is trimmed as every DEVEXIT_* value is; blank is unset', () => {
    const { root, spec } = layout();
    roots.push(root);
    const native = join(__dirname, '..', 'build', 'Release', 'devexit_native.node');
    process.env[ENV] = `  ${native}\n`;
    expect(addonCandidates(spec)).toEqual([{ kind: 'env', where: native }]);
    expect(loadAddon<{ closeAll: unknown }>({ ...spec, exports: ['closeAll'] }).closeAll).toBeTypeOf(
      'function',
    );
    process.env[ENV] = ' \t ';
    expect(addonCandidates(spec).map((a) => a.kind)).toEqual(['build', 'build', 'prebuild']);
    const err = thrown(() => loadAddon(spec));
    expect(err.message).not.toContain(ENV + ' names');
    expect(err.message).toContain(`  - or point ${ENV} at a built thing.node`);
  });

  it('platformPackages: false (a test double): no prebuild is looked for or offered', () => {
    const { root, spec } = layout({ platform: 'bogus' });
    roots.push(root);
    const sourceOnly = { ...spec, platformPackages: false as const };
    expect(platformPackageName(sourceOnly)).toBeUndefined();
    const err = thrown(() => loadAddon(sourceOnly));
    expect(err.message).not.toMatch(/prebuild/);
    expect(err.message).toContain('npx devexit-build @devexit-test/thing');
  });

  it('platformPackages names the base package explicitly', () => {
    const { root, spec } = layout();
    roots.push(root);
    expect(platformPackageName(spec, 'linux-arm64-musl')).toBe('@devexit-test/thing-linux-arm64-musl');
    expect(platformPackageName({ ...spec, platformPackages: '@other/pkg' }, 'darwin-arm64')).toBe(
      '@other/pkg-darwin-arm64',
    );
  });

  // Issue 18: DEVEXIT_CPU_ADDON=/etc/passwd was require'd as JavaScript, and an addon of another
  // backend loaded as if it were the one asked for. These failed before the loader checked.
  it('refuses a file not named .node without running it', () => {
    const { root, spec } = layout();
    roots.push(root);
    const script = join(root, 'evil.js');
    writeFileSync(script, 'globalThis.__devexitLoaderRan = true;\n');
    process.env[ENV] = script;
    const err = thrown(() => loadAddon(spec));
    expect(err.code).toBe('ERR_DEVEXIT_UNAVAILABLE');
    expect(err.message.split('\n')[0]).toBe(
      `devexit: cannot load thing.node: ${script} is not a .node file (an addon is loaded only from a .node file).`,
    );
    expect((globalThis as { __devexitLoaderRan?: boolean }).__devexitLoaderRan).toBeUndefined();
    process.env[ENV] = '/etc/passwd';
    expect(thrown(() => loadAddon(spec)).message).toContain('/etc/passwd is not a .node file');
  });

  it('a .node file with a shared-object header that dlopen refuses: its error, with the cause', () => {
    const { root, spec } = layout();
    roots.push(root);
    const file = join(root, 'short.node');
    writeFileSync(file, Buffer.from([0x7f, 0x45, 0x4c, 0x46, 1, 2, 3]));
    process.env[ENV] = file;
    const err = thrown(() => loadAddon(spec));
    expect(err.message.split('\n')[0]).toMatch(
      /exists but did not load: .*(invalid ELF header|file too short)/,
    );
    expect(err.cause).toBeInstanceOf(Error);
  });

  it('cuts a long override path to about 80 characters in the message', () => {
    const { root, spec } = layout();
    roots.push(root);
    process.env[ENV] = `/${'x'.repeat(5000)}.node`;
    const err = thrown(() => loadAddon(spec));
    expect(err.message.length).toBeLessThan(1500);
    expect(err.message).toContain('(5006 characters)');
  });

  it('an addon that is not the one asked for: a typed error naming expected and found', () => {
    const { root, spec } = layout();
    roots.push(root);
    const native = join(__dirname, '..', 'build', 'Release', 'devexit_native.node');
    process.env[ENV] = native;
    const err = thrown(() => loadAddon({ ...spec, exports: ['probe', 'threads'] })) as DevexitErrorType & {
      expected?: string;
      found?: string;
    };
    expect(err.code).toBe('ERR_DEVEXIT_UNAVAILABLE');
    expect(err.expected).toBe('thing (exports probe, threads)');
    expect(err.found).toBe('devexit_native.node, which lacks probe, threads');
    expect(err.message.split('\n')[0]).toBe(
      `devexit: cannot load thing.node: ${native} is not thing: expected thing (exports probe, threads); found devexit_native.node, which lacks probe, threads.`,
    );
    const abi = thrown(() => loadAddon({ ...spec, abi: 999 })) as DevexitErrorType & { found?: string };
    expect(abi.found).toMatch(/^devexit_native\.node with ABI \d+$/);
    expect(loadAddon<{ closeAll: unknown }>({ ...spec, exports: ['closeAll'] }).closeAll).toBeTypeOf(
      'function',
    );
  });
});
