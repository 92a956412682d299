#!/usr/bin/env node
import { demo, formatDemo } from './demo.js';
import { doctor, formatDoctor } from './doctor.js';

const USAGE = `usage: devexit <command>

  doctor [--json]                 platform, libc, which exit layers are armed, each backend's availability
  demo [--runs N] [--backend B]   exit mid-work by several paths, with devexit and with the guard disabled
`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === 'doctor') {
    const r = await doctor();
    process.stdout.write(`${rest.includes('--json') ? JSON.stringify(r, null, 2) : formatDoctor(r)}\n`);
    return 0;
  }
  if (command === 'demo') {
    let runs = 3;
    const backends: string[] = [];
    for (let i = 0; i < rest.length; i++) {
      const arg = rest[i];
      const value = rest[i + 1];
      if (arg === '--runs' && value && /^[1-9][0-9]*$/.test(value)) {
        runs = Number(value);
        i++;
      } else if (arg === '--backend' && value) {
        backends.push(value);
        i++;
      } else {
        process.stderr.write(`devexit demo: bad argument ${JSON.stringify(arg)}\n${USAGE}`);
        return 2;
      }
    }
    const rows = await demo(backends.length ? { runs, backends } : { runs });
    process.stdout.write(`\n${formatDemo(rows)}\n`);
    const bad = rows.filter((r) => r.withDevexit.crashes > 0 || r.withDevexit.hangs > 0);
    return rows.length > 0 && bad.length === 0 ? 0 : 1;
  }
  process.stderr.write(
    command && command !== '--help' ? `devexit: unknown command ${JSON.stringify(command)}\n${USAGE}` : USAGE,
  );
  return command === '--help' ? 0 : 2;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`devexit: ${(err as Error).stack ?? err}\n`);
    process.exitCode = 1;
  },
);
