// Figures for the graceful path (not a test): `node tooling/device-checks/cpu/shutdown-figures.mjs [runs]`.
// The acceptance scenario of shutdown(): DEVEXIT_SIGNALS=SIGINT,SIGTERM, a cpu device with 200
// queued launches and a pending read, then the signal; and a second signal mid-drain. Prints how
// the children ended, what the read gave, how often the queue closed and in which layer.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const { runMany, outcomes } = require('@devexit/testkit');
const fixture = join(
  dirname(require.resolve('@devexit/cpu/package.json')),
  'test',
  'fixtures',
  'signalDrain.cjs',
);
const runs = Number(process.argv[2] || 20);
const env = { DEVEXIT_SIGNALS: 'SIGINT,SIGTERM', DEVEXIT_TIMEOUT_MS: '20000' };

const count = (items) => {
  const out = {};
  for (const i of items) out[i] = (out[i] ?? 0) + 1;
  return JSON.stringify(out);
};
const lines = (r, prefix) => r.stderr.split('\n').filter((l) => l.startsWith(prefix));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

const cases = [
  ['SIGTERM', { signalOnReady: 'SIGTERM' }],
  ['SIGINT', { signalOnReady: 'SIGINT' }],
  [
    'SIGTERM, then SIGINT 20 ms into the drain',
    {
      signalOnReady: 'SIGTERM',
      signalOn: [{ line: 'draining', signal: 'SIGINT', delayMs: 20 }],
    },
  ],
  ['no DEVEXIT_SIGNALS (control), SIGTERM', { signalOnReady: 'SIGTERM', noSignals: true }],
];
for (const [name, c] of cases) {
  const results = await runMany(runs, {
    script: fixture,
    env: c.noSignals ? {} : env,
    signalOnReady: c.signalOnReady,
    signalOn: c.signalOn,
    timeoutMs: 60_000,
  });
  const closes = results.map((r) => r.report.filter((e) => e.service === 'queue'));
  console.log(`${name} (${runs} runs)`);
  console.log(`  ended:             ${JSON.stringify(outcomes(results))}`);
  console.log(`  read:              ${count(results.map((r) => lines(r, 'read ')[0] ?? '(never settled)'))}`);
  console.log(
    `  read at the signal: ${count(results.map((r) => lines(r, 'at shutdown:')[0]?.slice(13) ?? '(no shutdown)'))}`,
  );
  console.log(
    `  queue closes/run:  ${count(closes.map((c) => c.length))}, layers ${count(closes.flat().map((e) => e.layer))}`,
  );
  console.log(
    `  drained:           ${count(closes.flat().map((e) => `${e.drained} (dropped ${e.dropped})`))}`,
  );
  const ms = closes.flat().map((e) => e.ms);
  if (ms.length)
    console.log(
      `  close ms (drain included): median ${median(ms).toFixed(1)}, max ${Math.max(...ms).toFixed(1)}`,
    );
}
