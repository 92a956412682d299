import { join } from 'node:path';
import { type ChildResult, crashed, runMany } from '@devexit/testkit';
import { BACKEND_NAMES, loadBackend } from './backends.js';

const CHILD = join(__dirname, '..', 'fixtures', 'demoChild.cjs');

export const DEMO_PATHS = [
  { path: 'natural-end', label: 'natural end', code: 0, signal: undefined },
  { path: 'process-exit', label: 'process.exit() mid-launch', code: 0, signal: undefined },
  { path: 'uncaught-exception', label: 'uncaught exception mid-flush', code: 1, signal: undefined },
  { path: 'sigint-handler', label: 'Ctrl-C (SIGINT handler exits)', code: 130, signal: 'SIGINT' as const },
] as const;

export interface DemoCell {
  runs: number;
  /** How the runs ended: "exit 0", "SIGSEGV", ... with counts. */
  endings: Record<string, number>;
  crashes: number;
  hangs: number;
  /** Closes that ran, per run (median). */
  closes: number;
  exitMs: number;
}

export interface DemoRow {
  backend: string;
  path: string;
  label: string;
  withDevexit: DemoCell;
  guardDisabled: DemoCell;
}

function cell(results: ChildResult[]): DemoCell {
  const endings: Record<string, number> = {};
  for (const r of results) {
    const k = r.timedOut ? 'hang (killed)' : r.signal ? r.signal : `exit ${r.code}`;
    endings[k] = (endings[k] ?? 0) + 1;
  }
  const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
  const mid = (xs: number[]) => sorted(xs)[Math.floor(xs.length / 2)] ?? 0;
  return {
    runs: results.length,
    endings,
    crashes: results.filter((r) => crashed(r)).length,
    hangs: results.filter((r) => r.timedOut).length,
    closes: mid(results.map((r) => r.report.length)),
    exitMs: mid(results.map((r) => r.ms)),
  };
}

export async function demo(options: { runs: number; backends?: string[]; log?: (line: string) => void }) {
  const log = options.log ?? ((l: string) => process.stdout.write(`${l}\n`));
  const rows: DemoRow[] = [];
  const names = options.backends ?? [...BACKEND_NAMES];
  for (const name of names) {
    const loaded = loadBackend(name);
    if ('error' in loaded) {
      log(`${name}: skipped (${loaded.error})`);
      continue;
    }
    const probe = await loaded.backend.probe();
    if (!probe.available) {
      log(`${name}: skipped (unavailable: ${probe.reason})`);
      continue;
    }
    log(`${name}: ${options.runs} runs per path and mode...`);
    for (const p of DEMO_PATHS) {
      const base = { script: CHILD, args: [loaded.module, p.path], timeoutMs: 20_000 };
      const opts = p.signal ? { ...base, signalOnReady: p.signal } : base;
      const on = await runMany(options.runs, opts);
      const off = await runMany(options.runs, { ...opts, env: { DEVEXIT_GUARD: '0' } });
      rows.push({
        backend: name,
        path: p.path,
        label: p.label,
        withDevexit: cell(on),
        guardDisabled: cell(off),
      });
    }
  }
  return rows;
}

function describeCell(c: DemoCell, withCloses: boolean): string {
  const endings = Object.entries(c.endings)
    .map(([k, n]) => (n === c.runs ? k : `${k} x${n}`))
    .join(', ');
  const verdict =
    c.crashes > 0 ? `CRASH ${c.crashes}/${c.runs}` : c.hangs > 0 ? `HANG ${c.hangs}/${c.runs}` : 'clean';
  const closes = withCloses ? `, ${c.closes} closes` : '';
  return `${verdict}: ${endings}${closes}, ${Math.round(c.exitMs)} ms`;
}

export function formatDemo(rows: DemoRow[]): string {
  const head = ['backend', 'exit path', 'with devexit', 'guard disabled'];
  const body = rows.map((r) => [
    r.backend,
    r.label,
    describeCell(r.withDevexit, true),
    describeCell(r.guardDisabled, false),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => (b[i] ?? '').length)));
  const line = (cols: string[]) => cols.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ');
  return [
    line(head),
    line(widths.map((w) => '-'.repeat(w))),
    ...body.map(line),
    '',
    'Each child keeps device 0 busy beside a service calling a crash-reproducing stand-in runtime',
    "(its exit teardown kills late callers, as HIP's and CUDA's do). 'closes' counts the services",
    "devexit closed before teardown; 'ms' is the child's whole run (median). Guard disabled =",
    'DEVEXIT_GUARD=0: the same program without devexit.',
  ].join('\n');
}
