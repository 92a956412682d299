// Every public subpath of @devexit/native, from ESM and from CommonJS, as installed (the package
// has no "exports" map: its subpaths are files of those names). Prints one JSON line; exit 0 only
// if all is right.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { abiVersion, include } from '@devexit/native';
import { loadAddon, loadedAddons } from '@devexit/native/loader';

const require = createRequire(import.meta.url);
const problems = [];
const expect = (ok, what) => {
  if (!ok) problems.push(what);
};
expect(abiVersion >= 1, `abiVersion ${abiVersion}`);
expect(typeof loadAddon === 'function', 'loader: no loadAddon');
expect(
  /devexit_native\.node$/.test(loadedAddons().devexit_native ?? ''),
  'loader: devexit_native not listed',
);
expect(require('@devexit/native/include') === include, 'include: require() differs');
// gyp's flags are for building from source: they need node-addon-api, which a user who builds
// installs. Without it, the file is still found (the error names node-addon-api, not gyp).
try {
  const gyp = await import('@devexit/native/gyp');
  expect(gyp.include === include && gyp.cflags_cc.includes('-std=c++17'), 'gyp: flags');
} catch (err) {
  expect(String(err.message).includes("'node-addon-api'"), `gyp: ${err.message}`);
}
expect(require('@devexit/native/loader').loadAddon === loadAddon, 'loader: require() differs');
expect(require('@devexit/native/package.json').name === '@devexit/native', 'package.json');
// The preload, both ways: the main-thread guard armed before the program runs.
const armed = "console.log(require('@devexit/native').guardState().tls.armed)";
for (const flag of ['-r', '--import']) {
  const r = spawnSync(process.execPath, [flag, '@devexit/native/register', '-e', armed], {
    encoding: 'utf8',
  });
  expect(
    r.status === 0 && r.stdout.trim() === 'true',
    `${flag} register: exit ${r.status} ${r.stdout}${r.stderr}`,
  );
}
console.log(JSON.stringify({ app: 'subpaths', problems }));
if (problems.length) process.exitCode = 1;
