// npm/pnpm install step: build the stand-in unless a build is already there, so that installing
// never replaces a library another process has loaded. In the workspace, the shared gyp script
// builds against the running Node's headers (no header download).
const { existsSync } = require('node:fs');
const { join } = require('node:path');
const { spawnSync } = require('node:child_process');

const built = ['libcuda.so.1', 'nvrtc_control.node'].every((f) =>
  existsSync(join(__dirname, 'build', 'Release', f)),
);
if (built) process.exit(0);
const workspaceGyp = join(__dirname, '..', 'scripts', 'gyp.mjs');
const r = existsSync(workspaceGyp)
  ? spawnSync(process.execPath, [workspaceGyp], { stdio: 'inherit' })
  : spawnSync('node-gyp', ['rebuild'], { stdio: 'inherit', shell: true });
process.exit(r.status ?? 1);
