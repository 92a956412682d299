import { join } from 'node:path';
import { BACKEND_NAMES, firstLine, loadBackend, probeBackend } from './backends.js';
import { type ChildResult, runMany } from './child.js';

const CHILD = join(__dirname, '..', 'fixtures', 'demoChild.cjs');
const CHILD_TIMEOUT_MS = 20_000;

export const DEMO_PATHS = [
  { path: 'natural-end', label: 'natural end', code: 0, signal: undefined },
  { path: 'process-exit', label: 'process.exit() mid-launch', code: 0, signal: undefined },
  { path: 'uncaught-exception', label: 'uncaught exception mid-flush', code: 1, signal: undefined },
  { path: 'sigint-handler', label: 'Ctrl-C (SIGINT handler exits)', code: 130, signal: 'SIGINT' as const },
] as const;

export interface DemoCell {
  runs: number;
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
  path: string;
  label: string;
  expectedCode: number;
  withDevexit: DemoCell;
  guardDisabled: DemoCell;
}

export interface DemoResult {
  runs: number;
  rows: DemoRow[];
  /** Backends that did not run, and why ("not installed (npm install @devexit/hip)", ...). */
  skipped: Array<{ backend: string; reason: string; requested: boolean }>;
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

export async function demo(options: {
  runs: number;
  backends?: string[] | undefined;
  /** Progress lines (the CLI writes them to stderr). */
  log?: (line: string) => void;
}): Promise<DemoResult> {
  const log = options.log ?? (() => {});
  const rows: DemoRow[] = [];
  const skipped: DemoResult['skipped'] = [];
  const requested = options.backends !== undefined;
  for (const name of options.backends ?? BACKEND_NAMES) {
    const loaded = loadBackend(name);
    if ('error' in loaded) {
      skipped.push({ backend: name, reason: loaded.error, requested });
      log(`${name}: skipped: ${loaded.error}`);
      continue;
    }
    const probe = await probeBackend(loaded.backend);
    if (!probe.available) {
      skipped.push({ backend: name, reason: `unavailable: ${probe.reason}`, requested });
      log(`${name}: skipped: unavailable: ${probe.reason}`);
      continue;
    }
    for (const p of DEMO_PATHS) {
      log(`${name}: ${p.label}: ${options.runs} run(s) with devexit, ${options.runs} with DEVEXIT_GUARD=0`);
      const base = { script: CHILD, args: [loaded.path, p.path], timeoutMs: CHILD_TIMEOUT_MS };
      const opts = p.signal ? { ...base, signalOnReady: p.signal } : base;
      const on = await runMany(options.runs, opts);
      const off = await runMany(options.runs, { ...opts, env: { DEVEXIT_GUARD: '0' } });
      rows.push({
        backend: name,
        path: p.path,
        label: p.label,
        expectedCode: p.code,
        withDevexit: summarizeRuns(on, p.code),
        guardDisabled: summarizeRuns(off, p.code),
      });
    }
  }
  const ok = rows.length > 0 && rows.every((r) => clean(r.withDevexit)) && !skipped.some((s) => s.requested);
  return { runs: options.runs, rows, skipped, ok };
}

export function describeCell(c: DemoCell, withCloses: boolean): string {
  const endings = Object.entries(c.endings)
    .map(([k, n]) => (n === c.runs ? k : `${k} x${n}`))
    .join(', ');
  const verdict =
    c.crashes > 0
      ? `CRASH ${c.crashes}/${c.runs}`
      : c.hangs > 0
        ? `HANG ${c.hangs}/${c.runs}`
        : c.unexpected > 0
          ? `UNEXPECTED ${c.unexpected}/${c.runs}`
          : 'clean';
  const closes = withCloses ? `, ${c.closes} closes` : '';
  return `${verdict}: ${endings}${closes}, ${c.exitMs} ms`;
}

export function formatDemo(result: DemoResult): string {
  const head = ['backend', 'exit path', 'with devexit', 'guard disabled'];
  const body = result.rows.map((r) => [
    r.backend,
    `${r.label} (exit ${r.expectedCode})`,
    describeCell(r.withDevexit, true),
    describeCell(r.guardDisabled, false),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => (b[i] ?? '').length)));
  const line = (cols: string[]) =>
    cols
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  const lines = result.rows.length
    ? [line(head), line(widths.map((w) => '-'.repeat(w))), ...body.map(line), '']
    : ['No backend ran.', ''];
  for (const s of result.skipped) lines.push(`${s.backend}: skipped: ${s.reason}`);
  for (const r of result.rows) {
    for (const [mode, c] of [
      ['with devexit', r.withDevexit],
      ['guard disabled', r.guardDisabled],
    ] as const) {
      if (c.firstError) lines.push(`${r.backend}, ${r.label}, ${mode}: ${firstLine(c.firstError)}`);
    }
  }
  if (
    result.skipped.length ||
    result.rows.some((r) => r.withDevexit.firstError || r.guardDisabled.firstError)
  )
    lines.push('');
  lines.push(
    'Each child opens device 0 of the backend, keeps it busy (launches queued, a flush pending) and',
    "leaves by the path shown. 'with devexit': 'closes' counts the services devexit closed before",
    "the runtime's own exit teardown. 'guard disabled': the same program with DEVEXIT_GUARD=0.",
    'Everything here is the real backend on this machine, no stand-in: whether the guard-disabled',
    "runs crash depends on the vendor runtime's exit teardown (see @devexit/cli's README).",
  );
  return lines.join('\n');
}
