import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ChildResult, outcomes, runMany, testRuns } from '@devexit/testkit';

/**
 * Runs fixtures/main.cjs (N Workers looping on a native call, ended one way once every Worker is
 * inside a call) in child processes, and reads what each child printed.
 */

const { writeMatMulChain } = require('../fixtures/onnxModel.cjs') as {
  writeMatMulChain: (file: string, options?: { size?: number; layers?: number }) => string;
};

export const RUNS = testRuns(20);
/** A hung child is killed past this (a run takes ~1-2 s; loading onnxruntime is most of it). */
export const TIMEOUT_MS = 30_000;
/** A row's own time limit: its children, two at a time, each killed past TIMEOUT_MS. */
export const ROW_TIMEOUT_MS = Math.ceil(RUNS / 2) * TIMEOUT_MS + 10_000;

export type Binding = 'standin-sync' | 'standin-async' | 'standin-stream' | 'onnx';
export type Ending = 'exit' | 'throw' | 'sigterm' | 'terminate';
export type Mode = 'none' | 'devexit' | 'guard';

/** The bindings of the control and recipe matrices, named as the tests name them. */
export const BINDINGS: readonly { binding: Binding; name: string }[] = [
  { binding: 'standin-sync', name: 'stand-in binding, sync call' },
  { binding: 'standin-async', name: 'stand-in binding, async call (AsyncWorker + Promise)' },
  { binding: 'onnx', name: 'onnxruntime-node, await session.run()' },
];

export const ENDINGS: readonly { ending: Ending; name: string }[] = [
  { ending: 'exit', name: 'main process.exit(0)' },
  { ending: 'throw', name: 'uncaught error in main' },
  { ending: 'sigterm', name: 'SIGTERM, handler process.exit(0)' },
  { ending: 'terminate', name: 'terminate of busy Workers' },
];

/**
 * What libstdc++ prints as the Napi::Error escapes: `terminate called after throwing an instance
 * of 'Napi::Error'`. When both Workers abort at once, the second one's `terminate called
 * recursively` cuts into that line, or its abort ends the process before the type is printed.
 */
export const ABORT_TEXT = /terminate called (after throwing an instance of '|recursively)/;
export const NAPI_ERROR_TEXT = "terminate called after throwing an instance of 'Napi::Error'";

/** A temp dir holding the test model (four 768×768 MatMuls), written by the tests, no download. */
export function writeModel(): { file: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'devexit-worker-fixtures-'));
  const file = writeMatMulChain(join(dir, 'matmul4x768.onnx'), { size: 768, layers: 4 });
  return { file, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export function runFixture(
  binding: Binding,
  ending: Ending,
  mode: Mode,
  model: string,
  runs = RUNS,
  more: { args?: string[]; env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<ChildResult[]> {
  return runMany(runs, {
    script: join(__dirname, '..', 'fixtures', 'main.cjs'),
    args: ['--binding', binding, '--ending', ending, '--mode', mode, '--model', model, ...(more.args ?? [])],
    env: more.env,
    timeoutMs: more.timeoutMs ?? TIMEOUT_MS,
    signalOnReady: ending === 'sigterm' ? 'SIGTERM' : undefined,
  });
}

const lines = (text: string) => text.split('\n');

/** The Workers' thread ids, from the `workers <id> ...` line (empty: never got all busy). */
export function workerIds(r: ChildResult): string[] {
  const line = lines(r.stdout).find((l) => l.startsWith('workers '));
  return line ? line.split(' ').slice(1) : [];
}

/** threadId -> how many `close ran <threadId>` lines. */
export function closesRan(r: ChildResult): Record<string, number> {
  const out: Record<string, number> = {};
  for (const l of lines(r.stdout)) {
    const m = /^close ran (\d+)$/.exec(l);
    if (m) out[m[1]!] = (out[m[1]!] ?? 0) + 1;
  }
  return out;
}

/** threadId -> the code of its 'exit' event. */
export function workerExitCodes(r: ChildResult): Record<string, number> {
  const out: Record<string, number> = {};
  for (const l of lines(r.stdout)) {
    const m = /^exit (\d+) (-?\d+)$/.exec(l);
    if (m) out[m[1]!] = Number(m[2]);
  }
  return out;
}

/** What `terminate` resolved with, per Worker in `workers` order, or undefined if not printed. */
export function terminated(r: ChildResult): number[] | undefined {
  const line = lines(r.stdout).find((l) => l.startsWith('terminated '));
  return line?.split(' ').slice(1).map(Number);
}

/** The first line of each error a Worker threw (main prints `worker <id> error: ...`). */
export const workerErrors = (r: ChildResult) => lines(r.stderr).filter((l) => /^worker \d+ error/.test(l));

export const aborted = (r: ChildResult) => r.signal === 'SIGABRT' || ABORT_TEXT.test(r.stderr);

/** `12/20 aborted (SIGABRT: 12, code 0: 8; the Napi::Error line whole in 11)` */
export function tally(results: ChildResult[]): string {
  const n = results.filter(aborted).length;
  const whole = results.filter((r) => r.stderr.includes(NAPI_ERROR_TEXT)).length;
  const o = Object.entries(outcomes(results))
    .map(([k, v]) => `${k}: ${v}`)
    .join(', ');
  return `${n}/${results.length} aborted (${o}; the Napi::Error line whole in ${whole})`;
}
