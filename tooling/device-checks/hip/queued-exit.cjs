'use strict';
// A child of bench-device.mjs: `node queued-exit.cjs <code object> <us> <n>`. sleep_us(<us>)
// running and <n> more launches queued behind it (launched from JS, one batch), then
// process.exit(0) 20 ms later; prints "busy t=<ms since the epoch>" first.
const { readFileSync, writeSync } = require('node:fs');
const { backend } = require('@devexit/hip');

const [image, us, n] = process.argv.slice(2);
(async () => {
  const device = await backend.open(0);
  const q = device.queue();
  const sleep = await device.loadKernel(new Uint8Array(readFileSync(image)), 'sleep_us');
  q.launch(sleep, 1, [{ u32: 1 }]);
  await q.flush();
  for (let i = 0; i <= Number(n); i++) q.launch(sleep, 1, [{ u32: Number(us) }]);
  q.submit();
  await new Promise((r) => setTimeout(r, 20));
  writeSync(1, `busy t=${Date.now()}\n`);
  process.exit(0);
})().catch((err) => {
  writeSync(1, `failed: ${err?.stack}\n`);
  process.exit(9);
});
