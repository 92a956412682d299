#!/usr/bin/env node
// Builds a package's binding.gyp with node-gyp against the headers of the running Node, so that
// no header download is ever needed (CI and installs reach only the npm registry).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const gyp = require.resolve('node-gyp/bin/node-gyp.js');
const extra = [];
const prefix = dirname(dirname(process.execPath));
if (!process.env.npm_config_nodedir && existsSync(join(prefix, 'include', 'node', 'node_api.h'))) {
  extra.push(`--nodedir=${prefix}`);
}
// configure + build, not rebuild: no clean step, so a build never removes an addon that another
// process is loading, and unchanged objects are reused.
for (const step of [
  ['configure', ...extra],
  ['build', '--jobs=max', ...extra],
]) {
  const r = spawnSync(process.execPath, [gyp, ...step], { stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
