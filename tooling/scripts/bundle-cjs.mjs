#!/usr/bin/env node
// node bundle-cjs.mjs <package dir>: replaces the package's dist/index.js, as tsc emitted it
// (CommonJS, one file per module), by one scope-hoisted file built from src/index.ts, and removes
// the .js files it took in (their .d.ts stay: tsc still checks and declares). Why: Node resolves,
// reads, wraps and compiles each module file on its own, and for a small package that is most of
// its load time (issue 13: @devexit/core in twelve files cost ~4 ms of CPU, in one ~0.6 ms).
// Dependencies and Node's built-ins stay external; so do the package's other entries (a file
// src/index.ts does not import, such as @devexit/native's register.ts, stays as tsc emitted it).
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import { join, relative, resolve } from 'node:path';

const require = createRequire(import.meta.url);
const { build } = await import(require.resolve('rolldown'));
const { minifySync } = await import(require.resolve('rolldown/utils'));

const dir = resolve(process.argv[2] ?? '.');
const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
const deps = Object.keys({ ...pkg.dependencies, ...pkg.peerDependencies, ...pkg.optionalDependencies });
const builtin = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);
const external = (id) =>
  builtin.has(id) || id.startsWith('node:') || deps.some((d) => id === d || id.startsWith(`${d}/`));

const src = join(dir, 'src');
const file = join(dir, 'dist', 'index.js');
// Not written by rolldown: its code is printed once more below, then written.
const out = await build({
  input: join(src, 'index.ts'),
  platform: 'node',
  external,
  write: false,
  logLevel: 'warn',
  // Modules are strict code; the bundle must be too (assigning a read-only property throws).
  // Comments stripped: they are in src/ and the .d.ts files; here they are only bytes to scan at every load.
  output: {
    file,
    format: 'cjs',
    sourcemap: false,
    banner: "'use strict';",
    comments: false,
  },
});
const chunk = out.output.find((o) => o.type === 'chunk');
// Then every non-ASCII character written as a \u escape (strings, templates, regexps), the code
// otherwise printed as it is (no minifying). One "…" anywhere makes V8 hold the whole source as a
// two-byte string: for @devexit/core's 62 KB bundle that was 16 more page faults at each load
// (73 -> 57, process.resourceUsage()), ~0.2-1 ms of CPU on the bench's VM.
const ascii = minifySync(file, chunk.code, {
  compress: false,
  mangle: false,
  codegen: { removeWhitespace: false, asciiOnly: true },
});
if (ascii.errors.length > 0)
  throw new Error(`bundle-cjs: ${file}: ${ascii.errors.map((e) => e.message).join('; ')}`);
writeFileSync(file, ascii.code);
// A module that is an entry of its own (@devexit/native/loader) keeps its file: it is in the bundle
// too, and shares its state with the bundle's copy through a global. Entries are named by
// package.json's exports, or, in a package without an exports map (@devexit/native: see its
// README), by its typesVersions (each subpath's declarations beside its dist/ file).
const entryFiles = [
  ...Object.values(pkg.exports ?? {}).map((e) => (typeof e === 'string' ? e : e?.default)),
  ...Object.values(pkg.typesVersions?.['*'] ?? {})
    .flat()
    .map((d) => (typeof d === 'string' ? d.replace(/\.d\.ts$/, '.js') : d)),
];
const entries = new Set(
  entryFiles
    .filter((e) => typeof e === 'string' && e.startsWith('./dist/'))
    .map((e) => join(src, e.slice('./dist/'.length).replace(/\.js$/, '.ts'))),
);
const taken = chunk.moduleIds.filter(
  (id) => id.startsWith(src) && !id.endsWith('index.ts') && !entries.has(id),
);
for (const id of taken) {
  const js = join(dir, 'dist', relative(src, id).replace(/\.ts$/, '.js'));
  if (existsSync(js)) rmSync(js);
}
console.log(
  `bundle-cjs: ${join(relative(process.cwd(), dir) || '.', 'dist', 'index.js')} holds ${taken.length + 1} modules`,
);
