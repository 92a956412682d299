import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { CloseReportEntry } from '@devexit/core';
import type { GuardState } from '@devexit/native';
import { type Malformed, now, type Sink, StderrSplitter, sinkWriter } from './output.js';
import { PROBE_PREFIX } from './probeProtocol.js';
import { type CloseTiming, closeTimings, type ProbeClose, type ProbeRegister } from './timing.js';

/** `devexit doctor run`: runs a program and tells how it ended, and what devexit did at its exit. */
export interface RunOptions {
  /** The program and its arguments (a .js/.cjs/.mjs file runs with this Node). */
  command: string[];
  /** Kill it (and its process group) when it has not exited this many ms after it started. */
  timeoutMs: number;
  /** Once it began to exit: kill it past this many ms more ("hung at exit"). */
  exitTimeoutMs: number;
  env?: NodeJS.ProcessEnv;
  /**
   * Where the program's own output goes (the doctor's lines are taken out of its stderr): a
   * stream keeps backpressure (the program's pipe is paused while the stream is full).
   */
  stdout?: Sink;
  stderr?: Sink;
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
  exitBegan?: {
    ms: number;
    layer: string;
    code?: number;
    signal?: string;
    /** What led there, oldest first: a signal, process.exit(n), an uncaught error, the natural end. */
    trigger?: Array<{ what: string; ms: number }>;
  };
  /** When its 'exit' event ran (ms after the run started). */
  exitEventMs?: number;
  /** How long devexit's exit layer (or shutdown()) took, closes and all, as it measured. */
  exitLayerMs?: number;
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
  /** When each close ran, ms after the run started (for the timeline), in the order of `closes`. */
  closeTimes: CloseTiming[];
  processes: ProcessReport[];
  /** Lines that began `devexit:report ` but were not a close report (all counted, 20 named). */
  malformed: Malformed[];
  malformedCount: number;
  /** Report lines past the 10,000 kept. */
  reportsDropped?: number;
  /**
   * Where no close was reported (DEVEXIT_REPORT=json, which the doctor sets, overridden by the
   * program itself?) but devexit's diagnostics channel published some: those (it sees only the
   * closes run while JavaScript ran, not the native layers').
   */
  unreportedCloses?: ProbeClose[];
  /** Its stdout or stderr was still held open by a process it started when it exited. */
  outputHeld?: boolean;
  /** The last 64 KiB of its stderr (without the doctor's lines). */
  stderrTail: string;
  /** One sentence for people. */
  summary: string;
  error?: string;
}

const CRASH_SIGNALS = new Set(['SIGSEGV', 'SIGABRT', 'SIGBUS', 'SIGILL', 'SIGFPE', 'SIGTRAP', 'SIGSYS']);
/** What a shell reports for a child a crash signal ended (SIGABRT, SIGSEGV), when one wraps it. */
const CRASH_CODES = new Set([134, 139, 135, 132, 136]);
/** After the program exited: how long its pipes may stay quiet before the doctor stops reading. */
const QUIET_AFTER_EXIT_MS = 250;
/** ...and how long, at most, it reads a pipe some other process still writes to. */
const READ_AFTER_EXIT_MS = 2_000;
const MAX_PROCESSES = 256;

function withProbe(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const probe = require.resolve('./probe.js');
  const quoted = /[\s"\\]/.test(probe) ? `"${probe.replace(/(["\\])/g, '\\$1')}"` : probe;
  const options = [env.NODE_OPTIONS, `--require ${quoted}`].filter(Boolean).join(' ');
  return { ...env, DEVEXIT_REPORT: 'json', NODE_OPTIONS: options };
}

/** Runs the program; never throws for the program's sake and never hangs past the timeouts. */
export function runProgram(options: RunOptions): Promise<RunReport> {
  const [file, ...rest] = options.command;
  // A script runs with this Node (TypeScript too: Node 22.18 and later strip its types).
  const isScript = /\.[cm]?[jt]s$/.test(file ?? '');
  const argv = isScript ? [process.execPath, file as string, ...rest] : options.command;
  const started = now();
  return new Promise((resolve) => {
    if (isScript && !existsSync(file as string)) {
      resolve(notStarted(options.command, `no such file: ${file}`, started));
      return;
    }
    const processes = new Map<number, ProcessReport>();
    const probeCloses: ProbeClose[] = [];
    const registered: ProbeRegister[] = [];
    const jsAtExit = new Map<number, Set<string>>();
    let firstExit: number | undefined; // when the first process began to exit (its clock)
    let timedOut: 'run' | 'exit' | undefined;
    let exitTimer: NodeJS.Timeout | undefined;
    let settled = false;
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
      const t = Number(event.t);
      if (!Number.isInteger(pid) || !Number.isFinite(t)) return;
      if (event.event === 'close') {
        if (probeCloses.length < 10_000)
          probeCloses.push({ ...(event as unknown as ProbeClose), t: t - started });
        return;
      }
      if (event.event === 'register') {
        if (registered.length < 10_000) registered.push(event as unknown as ProbeRegister);
        return;
      }
      let p = processes.get(pid);
      if (!p) {
        if (processes.size >= MAX_PROCESSES) return;
        p = { pid, devexit: { core: false, native: false } };
        processes.set(pid, p);
      }
      const state = event.devexit as { core: boolean; native: boolean; guard?: GuardState } | undefined;
      if (state) {
        p.devexit = { core: state.core === true, native: state.native === true };
        if (state.guard) p.guard = state.guard;
      }
      if (event.event === 'exit') p.exitEventMs = round(t - started);
      if (event.event === 'exit-end' && p.exitLayerMs === undefined && typeof event.ms === 'number')
        p.exitLayerMs = round(event.ms);
      if (event.event === 'exit-start' && !p.exitBegan) {
        p.exitBegan = { ms: round(t - started), layer: String(event.layer ?? 'exit') };
        if (typeof event.code === 'number') p.exitBegan.code = event.code;
        if (typeof event.signal === 'string') p.exitBegan.signal = event.signal;
        if (Array.isArray(event.trigger) && event.trigger.length > 0) {
          p.exitBegan.trigger = (event.trigger as Array<{ what: unknown; t: unknown }>).map((x) => ({
            what: String(x.what),
            ms: round(Number(x.t) - started),
          }));
        }
        if (Array.isArray(event.jsCloses))
          jsAtExit.set(pid, new Set((event.jsCloses as unknown[]).slice(0, 1000).map(String)));
        if (firstExit === undefined) {
          firstExit = t;
          exitTimer = setTimeout(() => kill('exit'), options.exitTimeoutMs);
        }
      }
    };
    const stdoutSink = sinkWriter(
      options.stdout,
      () => child.stdout.pause(),
      () => child.stdout.resume(),
    );
    const stderrSink = sinkWriter(
      options.stderr,
      () => child.stderr.pause(),
      () => child.stderr.resume(),
    );
    const splitter = new StderrSplitter({ probe: PROBE_PREFIX }, onProbe, stderrSink);
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      lastData = now();
      stdoutSink(d);
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      lastData = now();
      splitter.write(d);
    });
    let lastData = 0;
    let ended: { code: number | null; signal: string | null; at: number } | undefined;
    let open = 2;
    const pipeEnded = () => {
      if (--open === 0 && ended) finish();
    };
    child.stdout.on('end', pipeEnded);
    child.stderr.on('end', pipeEnded);
    let drainTimer: NodeJS.Timeout | undefined;

    const finish = (error?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(runTimer);
      clearTimeout(exitTimer);
      clearTimeout(drainTimer);
      splitter.end();
      const outputHeld = open > 0 && !error;
      // A daemon it started may hold the pipes for ever: stop reading them.
      child.stdout.destroy();
      child.stderr.destroy();
      if (error) {
        resolve(notStarted(options.command, error, started, child.pid));
        return;
      }
      const closes = splitter.reports.map((r) => r.entry);
      const report = classify({
        command: options.command,
        code: ended?.code ?? null,
        signal: ended?.signal ?? null,
        timedOut,
        atExit: firstExit !== undefined,
        ms: (ended?.at ?? now()) - started,
        exitMs: firstExit === undefined ? undefined : (ended?.at ?? now()) - firstExit,
        closes,
        processes: [...processes.values()],
        timeouts: options,
      });
      report.closeTimes = closeTimings(
        splitter.reports.map((r) => ({ ...r, at: r.at - started })),
        probeCloses,
        registered,
        new Map(report.processes.flatMap((p) => (p.exitBegan ? [[p.pid, p.exitBegan.ms] as const] : []))),
        jsAtExit,
      );
      report.malformed = splitter.malformed;
      report.malformedCount = splitter.malformedCount;
      if (splitter.malformedCount > 0) {
        const first = splitter.malformed[0];
        report.summary += `; ${splitter.malformedCount} malformed devexit:report line(s) ignored (${first?.why}: ${JSON.stringify(first?.line)})`;
      }
      if (splitter.reportsDropped) report.reportsDropped = splitter.reportsDropped;
      if (closes.length === 0 && probeCloses.length > 0) report.unreportedCloses = probeCloses;
      if (outputHeld) report.outputHeld = true;
      report.stderrTail = splitter.tail;
      if (child.pid !== undefined) report.pid = child.pid;
      resolve(report);
    };
    // The run ends when the program does, not when its pipes close: a daemon it started may
    // hold them. What is still in them is read until they go quiet.
    const afterExit = () => {
      if (settled) return;
      const at = now();
      const quiet = at - lastData >= QUIET_AFTER_EXIT_MS;
      if (open === 0 || quiet || at - (ended?.at ?? at) >= READ_AFTER_EXIT_MS) finish();
      else drainTimer = setTimeout(afterExit, QUIET_AFTER_EXIT_MS);
    };
    child.on('error', (err) => finish(startError(err, file)));
    child.on('exit', (code, signal) => {
      ended = { code, signal, at: now() };
      clearTimeout(runTimer);
      clearTimeout(exitTimer);
      if (open === 0) finish();
      else drainTimer = setTimeout(afterExit, QUIET_AFTER_EXIT_MS);
    });
  });
}

/** Why the command could not start; a file that exists here but is looked up in PATH says so. */
function startError(err: NodeJS.ErrnoException, file: string | undefined): string {
  if (err.code === 'ENOENT' && file && !file.includes('/') && existsSync(file))
    return `${err.message}: "${file}" is a file here, but a command without a "/" is looked up in PATH: run it with its interpreter ("node ${file}" for a script), or as "./${file}" if it is executable`;
  return err.message;
}

function notStarted(command: string[], error: string, started: number, pid?: number): RunReport {
  const report: RunReport = {
    command,
    code: null,
    signal: null,
    verdict: 'not-started',
    crashed: false,
    hung: false,
    atExit: false,
    ms: round(now() - started),
    closes: [],
    closeTimes: [],
    processes: [],
    malformed: [],
    malformedCount: 0,
    stderrTail: '',
    summary: `COULD NOT START ${JSON.stringify(command[0] ?? '')}: ${error}`,
    error,
  };
  if (pid !== undefined) report.pid = pid;
  return report;
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
    closeTimes: [],
    processes: r.processes,
    malformed: [],
    malformedCount: 0,
    stderrTail: '',
    summary,
  };
  if (r.exitMs !== undefined) out.exitMs = round(r.exitMs);
  return out;
}

const round = (ms: number) => Math.round(ms * 100) / 100;
