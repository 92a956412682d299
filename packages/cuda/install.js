// npm/pnpm install step: build the addon unless a build is already there (a workspace build, or
// DEVEXIT_CUDA_ADDON), so that installing never deletes an addon another process has loaded.
// Building needs no CUDA: libcuda and NVRTC are loaded at run time.
const { existsSync } = require('node:fs');
const { join } = require('node:path');
const { spawnSync } = require('node:child_process');

if (process.env.DEVEXIT_CUDA_ADDON || existsSync(join(__dirname, 'build', 'Release', 'devexit_cuda.node'))) {
  process.exit(0);
}
const workspaceGyp = join(__dirname, '..', '..', 'tooling', 'scripts', 'gyp.mjs');
const r = existsSync(workspaceGyp)
  ? spawnSync(process.execPath, [workspaceGyp], { stdio: 'inherit' })
  : spawnSync('node-gyp', ['rebuild'], { stdio: 'inherit', shell: true });
process.exit(r.status ?? 1);
