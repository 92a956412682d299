// The package has no "exports" map (README.md, "Why no exports map"): its subpaths are files of
// those names at its root. Each one, from ESM and from CommonJS, in a child Node resolving the
// package by name from a node_modules directory, as a program that depends on it does.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const packageDir = join(__dirname, '..');
let app = '';

beforeAll(() => {
  app = mkdtempSync(join(tmpdir(), 'devexit-subpaths-'));
  mkdirSync(join(app, 'node_modules', '@devexit'), { recursive: true });
  symlinkSync(packageDir, join(app, 'node_modules', '@devexit', 'native'), 'dir');
});
afterAll(() => rmSync(app, { recursive: true, force: true }));

function node(args: string[], file?: [string, string]) {
  if (file) writeFileSync(join(app, file[0]), file[1]);
  const r = spawnSync(process.execPath, args, { cwd: app, encoding: 'utf8', timeout: 30_000 });
  return { code: r.status, signal: r.signal, out: `${r.stdout}${r.stderr}`.trim() };
}

describe('@devexit/native subpaths, resolved by name', () => {
  it('ESM: named imports from the package, loader and gyp; include and package.json through require', () => {
    const r = node(
      ['main.mjs'],
      [
        'main.mjs',
        `import { createRequire } from 'node:module';
import { abiVersion, include } from '@devexit/native';
import { cflags_cc, include as gypInclude, include_dirs } from '@devexit/native/gyp';
import { loadAddon, loadedAddons, platformTag } from '@devexit/native/loader';
const require = createRequire(import.meta.url);
console.log(JSON.stringify({
  abiVersion, loader: typeof loadAddon, tag: platformTag(), native: loadedAddons().devexit_native,
  gyp: cflags_cc.includes('-std=c++17') && include_dirs.includes(include) && gypInclude === include,
  include: require('@devexit/native/include') === include,
  name: require('@devexit/native/package.json').name,
}));`,
      ],
    );
    expect(r.code, r.out).toBe(0);
    expect(JSON.parse(r.out)).toEqual({
      abiVersion: 1,
      loader: 'function',
      tag: 'linux-x64-gnu',
      native: join(packageDir, 'build', 'Release', 'devexit_native.node'),
      gyp: true,
      include: true,
      name: '@devexit/native',
    });
  });

  it('CommonJS: the same subpaths by require(), each the same object as ESM gets', () => {
    const r = node([
      '-e',
      `const n = require('@devexit/native'); const l = require('@devexit/native/loader');
const g = require('@devexit/native/gyp');
console.log(JSON.stringify([typeof l.loadAddon, g.include === n.include, require('@devexit/native/include') === n.include,
  require('@devexit/native/package.json').name]));`,
    ]);
    expect(r.code, r.out).toBe(0);
    expect(JSON.parse(r.out)).toEqual(['function', true, true, '@devexit/native']);
  });

  it.each([['-r'], ['--import']])(
    'the preload by %s arms the main-thread guard before the program',
    (flag) => {
      const r = node([
        flag,
        '@devexit/native/register',
        '-e',
        "console.log(require('@devexit/native').guardState().tls.armed)",
      ]);
      expect(r.code, r.out).toBe(0);
      expect(r.out).toBe('true');
    },
  );

  it('the include directory is not importable from ESM (a directory): the error says so, and gyp has it', () => {
    const r = node(['-e', "import('@devexit/native/include').catch((e) => console.log(e.code))"]);
    expect(r.out).toBe('ERR_UNSUPPORTED_DIR_IMPORT');
  });
});
