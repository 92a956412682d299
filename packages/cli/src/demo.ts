import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ChildOptions, type ChildResult, runMany } from './child.js';
import { type DemoTarget, demoTargets, type Skip } from './demoTargets.js';
import { runProgram } from './run.js';
import { timelinePage } from './timelineHtml.js';

const CHILD_TIMEOUT_MS = 20_000;

export const DEMO_PATHS = [
  { path: 'natural-end', label: 'natural end', code: 0, signal: undefined },
  { path: 'process-exit', label: 'process.exit()', code: 0, signal: undefined },
  { path: 'uncaught-exception', label: 'uncaught exception', code: 1, signal: undefined },
  { path: 'sigint-handler', label: 'Ctrl-C, handler exits', code: 130, signal: 'SIGINT' as const },
] as const;

export interface DemoCell {
  runs: number;
  /** The exit code the path asks for. */
  expectedCode: number;
  /** How the runs ended: "exit 0", "SIGSEGV", "hang (killed)", with counts. */
  endings: Record<string, number>;
  /** Ended by a signal, or exit 134/139. */
  crashes: number;
  /** Killed after the timeout. */
  hangs: number;
  /** Exited normally, but not with the code the path asks for. */
  unexpected: number;
  /** Closes devexit reported, per run (median). */
  closes: number;
  /** A child's whole run, ms (median). */
  exitMs: number;
  /** The first line of stderr of a run that crashed, hung or exited unexpectedly. */
  firstError?: string;
}

export interface DemoRow {
  backend: string;
  /** The runtime the rows ran on: "hip · real ROCm 5.2", "cuda · stand-in libcuda". */
  runtime: string;
  /** A test double stands in for the vendor runtime. */
  standIn: boolean;
  path: string;
  label: string;
  expectedCode: number;
  withDevexit: DemoCell;
  guardDisabled: DemoCell;
}

export interface DemoResult {
  runs: number;
  rows: DemoRow[];
  /** What each runtime is, in a sentence, by runtime name. */
  runtimes: Array<{ runtime: string; standIn: boolean; about: string; race: boolean }>;
  /** Backends that did not run, and why ("not installed (npm install @devexit/hip)", ...). */
  skipped: Array<{ backend: string; reason: string; requested: boolean }>;
  /** Lines to read: fallbacks taken, races that did not crash unguarded this time. */
  notes: string[];
  /** The timeline page written for one row (with and without devexit), if any. */
  timeline?: string;
  /** Every run with devexit ended as its path asks, at least one backend ran, none requested was skipped. */
  ok: boolean;
}

/** How a set of runs of one path ended, against the exit code the path asks for. */
export function summarizeRuns(results: ChildResult[], expectedCode: number): DemoCell {
  const endings: Record<string, number> = {};
  let firstError: string | undefined;
  let crashes = 0;
  let hangs = 0;
  let unexpected = 0;
  for (const r of results) {
    const k = r.timedOut ? 'hang (killed)' : r.signal ? r.signal : `exit ${r.code}`;
    endings[k] = (endings[k] ?? 0) + 1;
    const crashed = !r.timedOut && (r.signal !== null || r.code === 134 || r.code === 139);
    if (crashed) crashes++;
    else if (r.timedOut) hangs++;
    else if (r.code !== expectedCode) unexpected++;
    if ((crashed || r.timedOut || r.code !== expectedCode) && firstError === undefined) {
      const line = r.stderrTail.split('\n').find((l) => l.trim() !== '' && !l.startsWith('devexit:report'));
      if (line) firstError = line.trim().slice(0, 200);
    }
  }
  const mid = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
  const out: DemoCell = {
    runs: results.length,
    expectedCode,
    endings,
    crashes,
    hangs,
    unexpected,
    closes: mid(results.map((r) => r.report.length)),
    exitMs: Math.round(mid(results.map((r) => r.ms))),
  };
  if (firstError !== undefined) out.firstError = firstError;
  return out;
}

const clean = (c: DemoCell) => c.crashes === 0 && c.hangs === 0 && c.unexpected === 0;

export interface DemoOptions {
  runs: number;
  backends?: string[] | undefined;
  /** Progress: one line per runtime ('runtime') and per exit path ('path'). */
  log?: (line: string, level: 'runtime' | 'path') => void;
  /** Where to write the timeline page of one row; false: none. Default: a temporary folder. */
  timeline?: string | false;
}

/** The default: the exit races, on the real runtime where it is installed, else on a stand-in. */
export const DEMO_DEFAULT_BACKENDS = ['hip', 'cuda'] as const;

export async function demo(options: DemoOptions): Promise<DemoResult> {
  const log = options.log ?? (() => {});
  const requested = options.backends !== undefined;
  const rows: DemoRow[] = [];
  const notes: string[] = [];
  const isTarget = (t: DemoTarget | Skip): t is DemoTarget => 'script' in t;
  let found = await demoTargets(options.backends ?? DEMO_DEFAULT_BACKENDS);
  const skipped = found.filter((t) => !isTarget(t)).map((t) => ({ ...(t as Skip), requested }));
  if (!requested && !found.some(isTarget)) {
    // Neither race can run here: the real backends that do, to show the closes at least.
    found = await demoTargets(['cpu', 'wgpu']);
    notes.push(
      'No runtime that crashes at exit is here, real or stand-in: the real cpu and wgpu backends instead.',
    );
    skipped.push(...found.filter((t) => !isTarget(t)).map((t) => ({ ...(t as Skip), requested: false })));
  }
  const targets = found.filter(isTarget);
  for (const s of skipped) log(`${s.backend}: skipped: ${s.reason}`, 'runtime');
  for (const target of targets) {
    log(
      `${target.runtime}: ${DEMO_PATHS.length} exit paths, ${options.runs} runs each with devexit and without`,
      'runtime',
    );
    const ran: Array<{ on: ChildResult[]; off: ChildResult[] }> = [];
    for (const p of DEMO_PATHS) {
      log(
        `${target.runtime}: ${p.label}: ${options.runs} run(s) with devexit, ${options.runs} with DEVEXIT_GUARD=0`,
        'path',
      );
      const opts = childOptions(target, p);
      const on = await runMany(options.runs, opts);
      const off = await runMany(options.runs, { ...opts, env: { ...opts.env, DEVEXIT_GUARD: '0' } });
      ran.push({ on, off });
    }
    // A race window is a millisecond or so: on a loaded machine a round may miss it. Once more.
    if (target.race && !ran.some((r) => r.off.some(crashed))) {
      log(
        `${target.runtime}: no crash without devexit yet: ${options.runs} more runs of each path`,
        'runtime',
      );
      for (const [i, p] of DEMO_PATHS.entries()) {
        const opts = childOptions(target, p);
        ran[i]?.off.push(
          ...(await runMany(options.runs, { ...opts, env: { ...opts.env, DEVEXIT_GUARD: '0' } })),
        );
      }
      if (!ran.some((r) => r.off.some(crashed)))
        notes.push(
          `${target.runtime}: no run crashed without devexit this time (the race window is narrow; try --runs 20).`,
        );
    }
    DEMO_PATHS.forEach((p, i) => {
      rows.push({
        backend: target.backend,
        runtime: target.runtime,
        standIn: target.standIn,
        path: p.path,
        label: p.label,
        expectedCode: p.code,
        withDevexit: summarizeRuns(ran[i]?.on ?? [], p.code),
        guardDisabled: summarizeRuns(ran[i]?.off ?? [], p.code),
      });
    });
  }
  const result: DemoResult = {
    runs: options.runs,
    rows,
    runtimes: targets.map((t) => ({ runtime: t.runtime, standIn: t.standIn, about: t.about, race: t.race })),
    skipped,
    notes,
    ok: rows.length > 0 && rows.every((r) => clean(r.withDevexit)) && !skipped.some((s) => s.requested),
  };
  const pictured = targets.find((t) => t.race) ?? targets[0];
  if (pictured && options.timeline !== false) {
    log(`${pictured.runtime}: one exit drawn, with devexit and without`, 'runtime');
    result.timeline = await demoTimeline(pictured, options.timeline);
  }
  return result;
}

function childOptions(target: DemoTarget, p: (typeof DEMO_PATHS)[number]): ChildOptions {
  const base = {
    script: target.script,
    args: [...target.args, p.path],
    timeoutMs: CHILD_TIMEOUT_MS,
    env: target.env,
  };
  return p.signal ? { ...base, signalOnReady: p.signal } : base;
}

const crashed = (r: ChildResult) => !r.timedOut && (r.signal !== null || r.code === 134 || r.code === 139);

/** One exit of `target` by process.exit(), with devexit and (until one crashes, 5 tries) without. */
async function demoTimeline(target: DemoTarget, file: string | undefined): Promise<string> {
  const path = DEMO_PATHS[1];
  const run = (guard: boolean) =>
    runProgram({
      command: [target.script, ...target.args, path.path],
      timeoutMs: CHILD_TIMEOUT_MS,
      exitTimeoutMs: CHILD_TIMEOUT_MS,
      env: { ...process.env, ...target.env, ...(guard ? {} : { DEVEXIT_GUARD: '0' }) },
    });
  const on = await run(true);
  let off = await run(false);
  for (let i = 0; i < 4 && !off.crashed; i++) off = await run(false);
  const out = file ?? join(mkdtempSync(join(tmpdir(), 'devexit-demo-')), 'timeline.html');
  writeFileSync(
    out,
    timelinePage(`devexit demo: ${target.runtime}, ${path.label}`, [
      { heading: `with devexit`, report: on },
      { heading: 'without devexit (DEVEXIT_GUARD=0)', report: off },
    ]),
  );
  return out;
}
