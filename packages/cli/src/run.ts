import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { type CloseReportEntry, parseReportLines } from '@devexit/core';
import type { GuardState } from '@devexit/native';
import { PROBE_PREFIX } from './probeProtocol.js';

/** `devexit doctor run`: runs a program and tells how it ended, and what devexit did at its exit. */
export interface RunOptions {
  /** The program and its arguments (a .js/.cjs/.mjs file runs with this Node). */
  command: string[];
  /** Kill it (and its process group) past this many ms in all. */
  timeoutMs: number;
  /** Once it began to exit: kill it past this many ms more ("hung at exit"). */
  exitTimeoutMs: number;
  env?: NodeJS.ProcessEnv;
  /** Where the program's own output goes (the doctor's lines are taken out of its stderr). */
  stdout?: (chunk: string) => void;
  stderr?: (chunk: string) => void;
}

export type Verdict =
  | 'clean'
  | 'exit-code'
  | 'signal'
  | 'crash'
  | 'crash-at-exit'
  | 'hang'
  | 'hang-at-exit'
  | 'not-started';

/** One Node process of the run, as its probe told it. */
export interface ProcessReport {
  pid: number;
  /** When it began to exit (ms after the run started), and by what (js-exit, shutdown, ...). */
  exitBegan?: { ms: number; layer: string; code?: number; signal?: string };
  /** Whether the program had loaded @devexit/core and @devexit/native when it began to exit. */
  devexit: { core: boolean; native: boolean };
  /** The exit layers as @devexit/native saw them then: enabled, armed (by what), exit handlers. */
  guard?: GuardState;
}

export interface RunReport {
  command: string[];
  pid?: number;
  /** How the program ended: an exit code, or the signal that ended it. */
  code: number | null;
  signal: string | null;
  verdict: Verdict;
  crashed: boolean;
  hung: boolean;
  /** The crash or hang came after the program began to exit. */
  atExit: boolean;
  /** ms from start to end. */
  ms: number;
  /** ms from the first process's exit beginning to the end of the run. */
  exitMs?: number;
  /** Every close devexit ran (DEVEXIT_REPORT=json in the program): device, service, layer, ms, outcome. */
  closes: CloseReportEntry[];
  processes: ProcessReport[];
  /** One sentence for people. */
  summary: string;
  error?: string;
}

const CRASH_SIGNALS = new Set(['SIGSEGV', 'SIGABRT', 'SIGBUS', 'SIGILL', 'SIGFPE', 'SIGTRAP', 'SIGSYS']);
/** What a shell reports for a child a crash signal ended (SIGABRT, SIGSEGV), when one wraps it. */
const CRASH_CODES = new Set([134, 139, 135, 132, 136]);

function withProbe(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const probe = join(__dirname, 'probe.js');
  const quoted = /[\s"\\]/.test(probe) ? `"${probe.replace(/(["\\])/g, '\\$1')}"` : probe;
  const options = [env.NODE_OPTIONS, `--require ${quoted}`].filter(Boolean).join(' ');
  return { ...env, DEVEXIT_REPORT: 'json', NODE_OPTIONS: options };
}

/** Runs the program; never throws for the program's sake and never hangs past the timeouts. */
export function runProgram(options: RunOptions): Promise<RunReport> {
  const [file, ...rest] = options.command;
  const argv = /\.[cm]?js$/.test(file ?? '') ? [process.execPath, file as string, ...rest] : options.command;
  const started = performance.now();
  const startedAt = Date.now();
  return new Promise((resolve) => {
    let stderr = '';
    let partial = '';
    const processes = new Map<number, ProcessReport>();
    let firstExit: number | undefined; // Date.now() in the process that began to exit first
    let timedOut: 'run' | 'exit' | undefined;
    let exitTimer: NodeJS.Timeout | undefined;
    const child = spawn(argv[0] as string, argv.slice(1), {
      env: withProbe(options.env ?? process.env),
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group: a timeout kills what it started too.
      detached: process.platform !== 'win32',
    });
    const kill = (why: 'run' | 'exit') => {
      timedOut ??= why;
      try {
        if (child.pid && process.platform !== 'win32') process.kill(-child.pid, 'SIGKILL');
        else child.kill('SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    const runTimer = setTimeout(() => kill('run'), options.timeoutMs);
    const onProbe = (line: string) => {
      let event: Record<string, unknown>;
      try {
        event = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return;
      }
      const pid = Number(event.pid);
      const p = processes.get(pid) ?? { pid, devexit: { core: false, native: false } };
      processes.set(pid, p);
      const state = event.devexit as { core: boolean; native: boolean; guard?: GuardState } | undefined;
      if (state) {
        p.devexit = { core: state.core, native: state.native };
        if (state.guard) p.guard = state.guard;
      }
      if (event.event === 'exit-start' && !p.exitBegan) {
        const ms = Number(event.t) - startedAt;
        p.exitBegan = { ms, layer: String(event.layer ?? 'exit') };
        if (typeof event.code === 'number') p.exitBegan.code = event.code;
        if (typeof event.signal === 'string') p.exitBegan.signal = event.signal;
        if (firstExit === undefined) {
          firstExit = Number(event.t);
          exitTimer = setTimeout(() => kill('exit'), options.exitTimeoutMs);
        }
      }
    };
    child.stdout.setEncoding('utf8').on('data', (d: string) => options.stdout?.(d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
      const text = partial + d;
      const parts = text.split('\n');
      partial = parts.pop() ?? '';
      let shown = '';
      for (const l of parts) {
        if (l.startsWith(PROBE_PREFIX)) onProbe(l.slice(PROBE_PREFIX.length));
        else if (!l.startsWith('devexit:report ')) shown += `${l}\n`;
      }
      if (shown) options.stderr?.(shown);
    });
    const finish = (code: number | null, signal: string | null, error?: string) => {
      clearTimeout(runTimer);
      clearTimeout(exitTimer);
      if (partial && !partial.startsWith(PROBE_PREFIX)) options.stderr?.(partial);
      const ended = performance.now();
      const report = classify({
        command: options.command,
        code,
        signal,
        timedOut,
        atExit: firstExit !== undefined,
        ms: ended - started,
        exitMs: firstExit === undefined ? undefined : Date.now() - firstExit,
        closes: parseReportLines(stderr),
        processes: [...processes.values()],
        timeouts: options,
      });
      if (child.pid !== undefined) report.pid = child.pid;
      if (error) {
        report.error = error;
        report.summary = `could not start ${JSON.stringify(argv[0])}: ${error}`;
      }
      resolve(report);
    };
    child.on('error', (err) => finish(null, null, err.message));
    child.on('close', (code, signal) => finish(code, signal));
  });
}

function classify(r: {
  command: string[];
  code: number | null;
  signal: string | null;
  timedOut: 'run' | 'exit' | undefined;
  atExit: boolean;
  ms: number;
  exitMs: number | undefined;
  closes: CloseReportEntry[];
  processes: ProcessReport[];
  timeouts: { timeoutMs: number; exitTimeoutMs: number };
}): RunReport {
  const crashed = !r.timedOut && (CRASH_SIGNALS.has(r.signal ?? '') || CRASH_CODES.has(r.code ?? -1));
  const hung = r.timedOut !== undefined;
  const ended = r.signal ? `ended by ${r.signal}` : `exited with code ${r.code}`;
  let verdict: Verdict;
  let summary: string;
  if (hung) {
    verdict = r.atExit ? 'hang-at-exit' : 'hang';
    summary = r.atExit
      ? `HUNG AT EXIT: it began to exit, then was still running ${r.timeouts.exitTimeoutMs} ms later (killed)`
      : `did not end within ${r.timeouts.timeoutMs} ms and never began to exit (killed): something keeps its event loop alive`;
  } else if (crashed) {
    verdict = r.atExit ? 'crash-at-exit' : 'crash';
    summary = r.atExit
      ? `CRASHED AT EXIT: ${ended} after it began to exit (a service still running while a runtime tore itself down?)`
      : `CRASHED while running: ${ended}, before any exit began`;
  } else if (r.signal) {
    verdict = 'signal';
    summary = `${ended} (not a crash signal)`;
  } else if (r.code === 0) {
    verdict = 'clean';
    summary = 'exited cleanly with code 0';
  } else {
    verdict = 'exit-code';
    summary = `${ended} (not a crash)`;
  }
  const out: RunReport = {
    command: r.command,
    code: r.code,
    signal: r.signal,
    verdict,
    crashed,
    hung,
    atExit: (crashed || hung) && r.atExit,
    ms: round(r.ms),
    closes: r.closes,
    processes: r.processes,
    summary,
  };
  if (r.exitMs !== undefined) out.exitMs = round(r.exitMs);
  return out;
}

const round = (ms: number) => Math.round(ms * 10) / 10;

export function formatRun(r: RunReport): string {
  const lines = [`devexit doctor run: ${r.command.join(' ')}`];
  lines.push(
    `  ended        ${r.signal ? `by signal ${r.signal}` : r.code === null ? 'not at all' : `with code ${r.code}`} after ${r.ms} ms`,
  );
  lines.push(`  verdict      ${r.summary}`);
  const main = r.processes.find((p) => p.exitBegan) ?? r.processes[0];
  if (main?.exitBegan) {
    const how = [
      main.exitBegan.layer,
      main.exitBegan.signal ? `signal ${main.exitBegan.signal}` : undefined,
      main.exitBegan.code !== undefined ? `code ${main.exitBegan.code}` : undefined,
    ]
      .filter(Boolean)
      .join(', ');
    lines.push(
      `  exit         began at ${main.exitBegan.ms} ms (${how}); the process ended ${r.exitMs ?? '?'} ms later`,
    );
  } else {
    lines.push('  exit         no exit began in any Node process it started (or none was a Node process)');
  }
  if (r.closes.length === 0) {
    lines.push(
      '  closes       none reported (devexit not loaded, nothing registered, or the layers are off)',
    );
  } else {
    lines.push(`  closes       ${r.closes.length}`);
    for (const c of r.closes) {
      const extra =
        c.drained === undefined
          ? ''
          : c.drained
            ? ', drained'
            : `, not drained${c.dropped ? ` (${c.dropped} dropped)` : ''}`;
      lines.push(
        `    ${`${c.device.type}:${c.device.index}/${c.service}`.padEnd(24)} ${c.outcome} in ${c.ms.toFixed(2)} ms (${c.layer}${extra})${c.error ? `: ${c.error}` : ''}`,
      );
    }
  }
  if (r.processes.length === 0) lines.push('  layers       unknown: no Node process reported');
  for (const p of r.processes) {
    const g = p.guard;
    const what = !p.devexit.core
      ? 'devexit not loaded'
      : !p.devexit.native || !g
        ? '@devexit/core only: the JS layer (no native layers)'
        : `js ${g.layers.js ? 'on' : 'OFF'}, main-thread guard ${g.layers.tls ? (g.tls.armed ? `armed (${g.tls.by})` : 'NOT armed') : 'OFF'}, atexit ${g.layers.atexit ? `on (${g.atexitHooks.join(', ')})` : 'OFF'}; deadline ${g.timeoutMs} ms`;
    lines.push(`  layers       pid ${p.pid}: ${what}`);
  }
  return lines.join('\n');
}
