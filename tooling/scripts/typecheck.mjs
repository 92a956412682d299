#!/usr/bin/env node
// `pnpm typecheck`: every package's tsconfig.json (its sources and tests: a superset of what its
// tsconfig.build.json publishes) type-checked strict without skipLibCheck by TypeScript 7
// (`typescript7`, the native compiler), one line per project. TypeScript 5.9 (the workspace's
// `typescript`) checks the same configurations in each package's `lint` and `build`
// (tsconfig.base.json has skipLibCheck false). `--ts 5.9 --ts 7` picks compilers; `--build` adds
// the tsconfig.build.json files. Exit 1 on any error.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const { values } = parseArgs({
  options: { ts: { type: 'string', multiple: true }, build: { type: 'boolean', default: false } },
});
const compilers = {
  5.9: join(root, 'node_modules', 'typescript', 'bin', 'tsc'),
  7: join(root, 'node_modules', 'typescript7', 'bin', 'tsc'),
};
const wanted = values.ts ?? ['7'];
for (const v of wanted)
  if (!compilers[v]) throw new Error(`--ts ${v}: one of ${Object.keys(compilers).join(', ')}`);

const projects = [];
for (const parent of ['packages', 'tooling']) {
  for (const name of readdirSync(join(root, parent)).sort()) {
    for (const config of values.build ? ['tsconfig.json', 'tsconfig.build.json'] : ['tsconfig.json']) {
      if (existsSync(join(root, parent, name, config))) projects.push({ dir: join(parent, name), config });
    }
  }
}

function check(version, project) {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [compilers[version], '-p', project.config, '--noEmit', '--skipLibCheck', 'false', '--pretty', 'false'],
      { cwd: join(root, project.dir), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => resolve({ version, project, code, out, ms: Date.now() - started }));
  });
}

// Two at a time: CI has two cores.
const jobs = wanted.flatMap((v) => projects.map((p) => [v, p]));
const results = [];
const lanes = Array.from({ length: 2 }, async () => {
  while (jobs.length) {
    const [v, p] = jobs.shift();
    results.push(await check(v, p));
  }
});
await Promise.all(lanes);
results.sort((a, b) => a.version.localeCompare(b.version) || a.project.dir.localeCompare(b.project.dir));
let failed = 0;
for (const r of results) {
  const errors = (r.out.match(/error TS\d+/g) ?? []).length;
  const ok = r.code === 0;
  if (!ok) failed++;
  console.log(
    `${ok ? 'ok  ' : 'FAIL'} TypeScript ${r.version}  ${join(r.project.dir, r.project.config)}${ok ? '' : `: ${errors} error(s)`} (${(r.ms / 1000).toFixed(1)} s)`,
  );
  if (!ok) console.log(r.out.trim().split('\n').slice(0, 30).join('\n'));
}
console.log(`typecheck: ${results.length - failed} of ${results.length} passed (strict, skipLibCheck false)`);
process.exitCode = failed ? 1 : 0;
