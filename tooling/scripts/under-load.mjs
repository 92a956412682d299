#!/usr/bin/env node
// node under-load.mjs -- <command> [args...]: runs the command with every core busy (one
// `node -e 'for(;;){}'` per core, started first and killed after), and exits with its status. For
// the exit, shutdown and signal suites: a test that passes only on a quiet machine fails CI here
// instead of on some loaded day (issue 17).
import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';

const at = process.argv.indexOf('--');
const [command, ...args] = at >= 0 ? process.argv.slice(at + 1) : [];
if (!command) {
  console.error('usage: node under-load.mjs -- <command> [args...]');
  process.exit(2);
}
const cores = availableParallelism();
const busy = Array.from({ length: cores }, () =>
  spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }),
);
const stop = () => {
  for (const b of busy) b.kill('SIGKILL');
};
process.on('SIGINT', () => {
  stop();
  process.exit(130);
});
console.log(`under-load: ${cores} busy loop(s), then: ${[command, ...args].join(' ')}`);
const started = Date.now();
const child = spawn(command, args, { stdio: 'inherit', shell: false });
child.on('exit', (code, signal) => {
  stop();
  console.log(`under-load: ${signal ?? `exit ${code}`} after ${Math.round((Date.now() - started) / 1000)} s`);
  process.exit(code ?? 1);
});
