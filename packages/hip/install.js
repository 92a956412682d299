// npm/pnpm install step: build the addon unless a build is already there, so that installing
// never replaces an addon another process has loaded. In the workspace, the shared gyp script
// builds against the running Node's headers (no header download).
const { existsSync } = require('node:fs');
const { join } = require('node:path');
const { spawnSync } = require('node:child_process');

// `npm rebuild` and npm_config_build_from_source=true ask for a fresh build.
const rebuild =
  process.env.npm_command === 'rebuild' || /^(1|true)$/i.test(process.env.npm_config_build_from_source ?? '');

if (!rebuild && existsSync(join(__dirname, 'build', 'Release', 'devexit_hip.node'))) process.exit(0);
const workspaceGyp = join(__dirname, '..', '..', 'tooling', 'scripts', 'gyp.mjs');
const r = existsSync(workspaceGyp)
  ? spawnSync(process.execPath, [workspaceGyp], { stdio: 'inherit' })
  : spawnSync('node-gyp', ['rebuild'], { stdio: 'inherit', shell: true });
process.exit(r.status ?? 1);
