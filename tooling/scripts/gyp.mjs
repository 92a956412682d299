#!/usr/bin/env node
// The workspace's build:native: builds the package in the current directory with the same code
// as `devexit-build` (packages/native/build.js), with this workspace's pinned node-gyp, against
// the running Node's own headers when they are installed (no header download).
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { buildPackage } = require('../../packages/native/build.js');
process.exitCode = buildPackage(process.cwd(), { nodeGyp: require.resolve('node-gyp/bin/node-gyp.js') });
