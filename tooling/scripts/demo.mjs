#!/usr/bin/env node
// `pnpm demo [options of devexit demo]`: builds what the demo needs, quietly (turbo's and
// node-gyp's output appear only when a build fails; --verbose shows them), then runs
// `devexit demo` with the options given.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const args = process.argv.slice(2);
const verbose = args.includes('--verbose');
const started = Date.now();
process.stderr.write('devexit demo: building the packages (turbo run build)...');
const build = spawnSync(
  join(root, 'node_modules', '.bin', 'turbo'),
  ['run', 'build', '--filter=@devexit/cli...', `--output-logs=${verbose ? 'full' : 'errors-only'}`],
  {
    cwd: root,
    encoding: 'utf8',
    stdio: verbose ? ['ignore', 'inherit', 'inherit'] : ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, TURBO_TELEMETRY_DISABLED: '1', DO_NOT_TRACK: '1' },
  },
);
if (build.status !== 0) {
  process.stderr.write(` FAILED (exit ${build.status ?? build.signal})\n`);
  if (!verbose) process.stderr.write(`${build.stdout ?? ''}${build.stderr ?? ''}`);
  if (build.error) process.stderr.write(`${build.error.message}\n`);
  process.exit(1);
}
process.stderr.write(` done in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
const demo = spawnSync(process.execPath, [join(root, 'packages', 'cli', 'dist', 'bin.js'), 'demo', ...args], {
  stdio: 'inherit',
});
process.exitCode = demo.status ?? 1;
