// ESM consumer of the installed tarballs: named imports from the CommonJS packages, a cpu device
// runs saxpy, then closes explicitly. Prints one JSON line; exit 0 only if all is right.
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { backend as cpu } from '@devexit/cpu';

const require = createRequire(import.meta.url);
const cpuDir = dirname(require.resolve('@devexit/cpu/package.json'));
const { loadedAddons } = require(require.resolve('@devexit/backend/loader', { paths: [cpuDir] }));

const n = 4096;
const device = await cpu.open(0);
const q = device.queue();
const x = q.alloc(4 * n);
const y = q.alloc(4 * n);
q.write(x, new Float32Array(n).fill(-1));
q.write(y, new Float32Array(n).fill(0.25));
q.launch(device.kernel('saxpy_f32'), n, [x, y, { f32: 0.5 }, { u32: n }]);
const bytes = await q.read(y);
const out = new Float32Array(bytes.buffer, bytes.byteOffset, n);
const wrong = out.findIndex((v) => v !== -0.25);
await device.close();

const report = { app: 'esm', saxpy: wrong === -1 ? 'ok' : `y[${wrong}] = ${out[wrong]}` };
for (const name of ['wgpu', 'hip', 'cuda']) {
  let mod;
  try {
    mod = await import(`@devexit/${name}`);
  } catch (err) {
    if (err.code !== 'ERR_MODULE_NOT_FOUND') throw err;
    continue;
  }
  report[name] = await mod.backend.probe();
}
report.addons = loadedAddons();
console.log(JSON.stringify(report));
if (wrong !== -1) process.exitCode = 1;
