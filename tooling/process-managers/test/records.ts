import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

// What fixtures/app.cjs wrote (one JSON object a line) and the summary the tests compare.

export const APP = join(__dirname, '..', 'fixtures', 'app.cjs');

export interface AppRecord {
  ev: string;
  t: number;
  [field: string]: unknown;
}

export function readRecords(file: string): AppRecord[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as AppRecord];
      } catch {
        return [{ ev: 'unparsed', t: 0, line: l }]; // a line cut by SIGKILL
      }
    });
}

type Listeners = { SIGINT: string[]; SIGTERM: string[] };

/** A deep-equal-friendly account of one run of the app. */
export function appSummary(records: AppRecord[]) {
  const of = (ev: string) => records.filter((r) => r.ev === ev);
  const issued = of('issued').map((r) => r.k as number);
  const settled = new Set([...of('read'), ...of('readFailed')].map((r) => r.k as number));
  const shutdown = of('shutdown');
  const closes: Record<string, string[]> = {};
  for (const c of of('close')) {
    const what = `${c.layer} ${c.outcome}${c.drained === null ? '' : ` drained=${c.drained} dropped=${c.dropped}`}`;
    const service = c.service as string;
    closes[service] = [...(closes[service] ?? []), what];
  }
  return {
    started: of('start').length,
    ready: of('ready').length,
    shutdowns: shutdown.map((s) => ({
      signal: s.signal,
      readsPending: (s.pending as number[]).length > 0,
    })),
    /** Reads that resolved with another value than the one their batch wrote. */
    wrongValues: of('read').filter((r) => r.value !== r.expected).length,
    readsFailed: of('readFailed').map((r) => r.code),
    /** Reads queued that never settled: lost work. */
    readsLost: issued.filter((k) => !settled.has(k)).length,
    closes,
    appCloses: of('appClose').length,
    /** The 'exit' event's code; null when the process ended by a signal. */
    exitEvent: of('exit')[0]?.code ?? null,
    failures: of('failed').map((r) => r.error),
  };
}

/** The app's SIGINT/SIGTERM listeners (function names) at its start and when shutdown began. */
export function listenersSeen(records: AppRecord[]): { start?: Listeners; shutdown?: Listeners } {
  const at = (ev: string) => records.find((r) => r.ev === ev)?.listeners as Listeners | undefined;
  return { start: at('start'), shutdown: at('shutdown') };
}

/** ms from the shutdown's start (the signal's arrival) to the last close the app recorded. */
export function drainMs(records: AppRecord[]): number | undefined {
  const start = records.find((r) => r.ev === 'shutdown')?.t;
  const last = records.filter((r) => r.ev === 'close').at(-1)?.t;
  return start !== undefined && last !== undefined ? last - start : undefined;
}

export const appPid = (records: AppRecord[]) =>
  records.find((r) => r.ev === 'start')?.pid as number | undefined;

/** Waits (polling the file) until the app wrote `ev`; throws past `timeoutMs`. */
export async function waitForRecord(file: string, ev: string, timeoutMs: number): Promise<AppRecord[]> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const records = readRecords(file);
    if (records.some((r) => r.ev === ev || r.ev === 'failed')) return records;
    if (Date.now() > until)
      throw new Error(
        `the app wrote no "${ev}" within ${timeoutMs} ms: ${JSON.stringify(records.slice(-5))}`,
      );
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Runs `fn(i)` for i in 0..n-1, `concurrency` at a time (CI has 2 cores). */
export async function repeat<T>(n: number, fn: (i: number) => Promise<T>, concurrency = 2): Promise<T[]> {
  const results: T[] = new Array(n);
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < n; i = next++) results[i] = await fn(i);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, lane));
  return results;
}

/** The expected account of a run that drained: every read resolved, each close ran once. */
export const DRAINED = (signal: string | null) => ({
  started: 1,
  ready: 1,
  shutdowns: [{ signal, readsPending: true }],
  wrongValues: 0,
  readsFailed: [],
  readsLost: 0,
  closes: { queue: ['shutdown ok drained=true dropped=0'], app: ['shutdown ok'] },
  appCloses: 1,
});

/** Prints median and max of each timing (ms) over the runs: the figures of the report. */
export function figures<T>(label: string, runs: T[], pick: (r: T) => Record<string, number | undefined>) {
  const cols: Record<string, number[]> = {};
  for (const r of runs)
    for (const [k, v] of Object.entries(pick(r))) if (v !== undefined) cols[k] = [...(cols[k] ?? []), v];
  const parts = Object.entries(cols).map(([k, xs]) => {
    const sorted = [...xs].sort((a, b) => a - b);
    return `${k} ms median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(0)} max ${sorted.at(-1)!.toFixed(0)}`;
  });
  console.log(`${label} (${runs.length} runs): ${parts.join(', ')}`);
}

/** appSummary with `readsLost` as "some read was lost", what a control is compared on. */
export function lossSummary(records: AppRecord[]) {
  const s = appSummary(records);
  return { ...s, readsLost: s.readsLost > 0 };
}

/** What a control shows: ended before any shutdown or close, a read in flight lost. */
export const LOST = {
  started: 1,
  ready: 1,
  shutdowns: [],
  wrongValues: 0,
  readsFailed: [],
  readsLost: true,
  closes: {},
  appCloses: 0,
  exitEvent: null,
  failures: [],
};
