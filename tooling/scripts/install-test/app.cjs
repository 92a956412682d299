// CommonJS consumer of the installed tarballs: a cpu device runs saxpy and reads it back; the
// device is left open, so the exit close runs. Prints one JSON line; exit 0 only if all is right.
const { dirname } = require('node:path');
const { backend: cpu } = require('@devexit/cpu');

// The loader's record of where each addon came from (the instance @devexit/cpu itself uses).
const cpuDir = dirname(require.resolve('@devexit/cpu/package.json'));
const { loadedAddons } = require(require.resolve('@devexit/backend/loader', { paths: [cpuDir] }));

function installed(name) {
  try {
    require.resolve(`@devexit/${name}/package.json`);
    return true;
  } catch {
    return false;
  }
}

async function main() {
  const n = 4096;
  const device = await cpu.open(0);
  const q = device.queue();
  const x = q.alloc(4 * n);
  const y = q.alloc(4 * n);
  q.write(x, new Float32Array(n).fill(1.5));
  q.write(y, new Float32Array(n).fill(2));
  q.launch(device.kernel('saxpy_f32'), n, [x, y, { f32: 3 }, { u32: n }]);
  const bytes = await q.read(y);
  const out = new Float32Array(bytes.buffer, bytes.byteOffset, n);
  const wrong = out.findIndex((v) => v !== 6.5);
  const report = { app: 'cjs', saxpy: wrong === -1 ? 'ok' : `y[${wrong}] = ${out[wrong]}` };
  for (const name of ['wgpu', 'hip', 'cuda']) {
    if (installed(name)) report[name] = await require(`@devexit/${name}`).backend.probe();
  }
  report.addons = loadedAddons();
  console.log(JSON.stringify(report));
  if (wrong !== -1) process.exitCode = 1;
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
