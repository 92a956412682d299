'use strict';
// A child of bench-device.mjs: `node queued-exit.cjs <ptx> <us> <n>`. One kernel spinning <us>
// microseconds and <n> more queued behind it (launched from JS, one batch), then process.exit(0)
// once it runs; prints "busy t=<ms since the epoch>" first.
const { readFileSync, writeSync } = require('node:fs');
const { backend } = require('@devexit/cuda');

const [ptx, us, n] = process.argv.slice(2);
(async () => {
  const device = await backend.open(0);
  const q = device.queue();
  const spin = await device.loadKernel(readFileSync(ptx, 'utf8'), 'spin');
  q.launch(spin, 1, [{ u32: 1 }]);
  await q.flush();
  for (let i = 0; i <= Number(n); i++) q.launch(spin, 1, [{ u32: Number(us) }]);
  q.submit();
  await new Promise((r) => setTimeout(r, 20));
  writeSync(1, `busy t=${Date.now()}\n`);
  process.exit(0);
})().catch((err) => {
  writeSync(1, `failed: ${err?.stack}\n`);
  process.exit(9);
});
