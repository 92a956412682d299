// npm/pnpm install step: build the bench addon unless a build is already there, so that
// installing never deletes an addon another process has loaded.
const { existsSync } = require('node:fs');
const { join } = require('node:path');
const { spawnSync } = require('node:child_process');

const rebuild =
  process.env.npm_command === 'rebuild' || /^(1|true)$/i.test(process.env.npm_config_build_from_source ?? '');
if (!rebuild && existsSync(join(__dirname, 'build', 'Release', 'devexit_bench.node'))) process.exit(0);
const r = spawnSync('node-gyp', ['rebuild'], { stdio: 'inherit', shell: true });
process.exit(r.status ?? 1);
