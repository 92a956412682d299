#!/usr/bin/env node
// Nothing here loads @devexit/native or a backend before a command needs it: `--help` and
// `doctor` work when the native addon is missing or broken.
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { DEMO_USAGE, DOCTOR_USAGE, parseCommandLine } from './args.js';
import { demo } from './demo.js';
import { formatDemo } from './demoFormat.js';
import { doctor, formatDoctor } from './doctor.js';
import { runProgram } from './run.js';
import { formatRun } from './runFormat.js';

/**
 * The demo's progress on stderr: on a terminal one line rewritten in place; elsewhere a line per
 * runtime (every exit path with --verbose), so that a log stays short.
 */
class Progress {
  private shown = false;
  constructor(
    private readonly stream: NodeJS.WriteStream,
    private readonly verbose: boolean,
  ) {}

  say(line: string, level: 'runtime' | 'path'): void {
    if (this.stream.isTTY && !this.verbose) {
      const width = Math.max((this.stream.columns ?? 80) - 1, 20);
      this.stream.write(`\r\x1b[K${line.slice(0, width)}`);
      this.shown = true;
    } else if (this.verbose || level === 'runtime') this.stream.write(`devexit demo: ${line}\n`);
  }

  done(): void {
    if (this.shown) this.stream.write('\r\x1b[K');
    this.shown = false;
  }
}

const out = (text: string) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
const err = (text: string) => process.stderr.write(text.endsWith('\n') ? text : `${text}\n`);

async function main(argv: string[]): Promise<number> {
  const command = parseCommandLine(argv);
  switch (command.kind) {
    case 'usage-error':
      err(`devexit${command.command ? ` ${command.command}` : ''}: ${command.message}\n\n${command.usage}`);
      return 2;
    case 'help':
      out(command.text);
      return 0;
    case 'version':
      out((require('../package.json') as { version: string }).version);
      return 0;
    case 'doctor': {
      const report = await doctor();
      out(command.json ? JSON.stringify(report, null, 2) : formatDoctor(report));
      if (report.problems.length) {
        err(`devexit doctor: ${report.problems.length} problem(s): ${report.problems.join('; ')}`);
        return 1;
      }
      return 0;
    }
    case 'doctor-run': {
      // Bad input before anything runs: the picture's folder must exist.
      const picture = command.timeline && resolve(command.timeline);
      if (picture && !(existsSync(dirname(picture)) && statSync(dirname(picture)).isDirectory())) {
        err(`devexit doctor: --timeline: no folder ${JSON.stringify(dirname(picture))}\n\n${DOCTOR_USAGE}`);
        return 2;
      }
      const report = await runProgram({
        command: command.command,
        timeoutMs: command.timeoutMs,
        exitTimeoutMs: command.exitTimeoutMs,
        // With --json, stdout is the report's alone. Streams: the program waits while they are full.
        stdout: command.json ? process.stderr : process.stdout,
        stderr: process.stderr,
      });
      out(command.json ? JSON.stringify(report, null, 2) : formatRun(report));
      if (picture) {
        const { runTimelineHtml, runTimelineSvg } = await import('./timelineHtml.js');
        try {
          writeFileSync(picture, /\.svg$/i.test(picture) ? runTimelineSvg(report) : runTimelineHtml(report));
          err(`devexit doctor run: the exit's timeline is in ${command.timeline}`);
        } catch (e) {
          err(`devexit doctor run: could not write ${command.timeline}: ${(e as Error).message}`);
          return 1;
        }
      }
      if (report.verdict === 'not-started') return 127;
      return report.crashed || report.hung ? 1 : 0;
    }
    case 'demo': {
      const picture = command.timeline ? resolve(command.timeline) : command.timeline;
      if (picture && !existsSync(dirname(picture))) {
        err(`devexit demo: --timeline: no folder ${JSON.stringify(dirname(picture))}\n\n${DEMO_USAGE}`);
        return 2;
      }
      const progress = new Progress(process.stderr, command.verbose);
      const result = await demo({
        runs: command.runs,
        backends: command.backends,
        timeline: picture,
        log: (line, level) => progress.say(line, level),
      });
      progress.done();
      out(command.json ? JSON.stringify(result, null, 2) : formatDemo(result, { verbose: command.verbose }));
      if (!result.ok) {
        err(
          result.rows.length === 0
            ? 'devexit demo: no backend could run'
            : result.skipped.some((s) => s.requested)
              ? `devexit demo: could not run ${result.skipped
                  .filter((s) => s.requested)
                  .map((s) => s.backend)
                  .join(', ')}`
              : 'devexit demo: some runs with devexit did not end as their exit path asks',
        );
        return 1;
      }
      return 0;
    }
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    // A bug in the CLI itself: the stack helps whoever reports it.
    err(`devexit: internal error: ${(error as Error)?.stack ?? String(error)}`);
    process.exitCode = 70;
  },
);
