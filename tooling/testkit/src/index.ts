import { execFile, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { type CloseReportEntry, parseReportLines } from '@devexit/core';

export interface ChildOptions {
  /** Script path (run with node) or full argv when `argv` is given. */
  script?: string;
  args?: string[];
  /** Extra node flags, e.g. ['-r', '@devexit/native/register']. */
  nodeArgs?: string[];
  env?: Record<string, string | undefined>;
  cwd?: string;
  /** Kill the child (SIGKILL) past this many ms. */
  timeoutMs?: number;
  /** Send this signal once the child prints `ready` on stdout. */
  signalOnReady?: NodeJS.Signals;
  /**
   * More signals, each sent once when the child prints its line on stdout (after `delayMs`):
   * [{ line: 'draining', signal: 'SIGINT', delayMs: 20 }].
   */
  signalOn?: readonly { line: string; signal: NodeJS.Signals; delayMs?: number }[];
}

export interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** The closes the child reported (DEVEXIT_REPORT=json is set for it). */
  report: CloseReportEntry[];
  ms: number;
  /** Date.now() when the child ended. */
  endedAt: number;
  timedOut: boolean;
}

/** Printed by a fixture (to stderr) just before it starts an exit, for exitLatency(). */
export const EXIT_AT = 'devexit-test:exit-at';

/** ms from the fixture's `devexit-test:exit-at <Date.now()>` line to the child's end, if printed. */
export function exitLatency(r: ChildResult): number | undefined {
  const m = new RegExp(`${EXIT_AT} (\\d+)`).exec(r.stderr);
  return m ? r.endedAt - Number(m[1]) : undefined;
}

/**
 * The environment of a child process of a test: this one's, with the JSON close report on, the
 * test runner's own variables removed, the ThreadSanitizer job's preload applied, then `extra`
 * (undefined removes a variable). For tests that spawn children themselves.
 */
export function childEnv(extra?: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, DEVEXIT_REPORT: 'json' };
  // Test runners set these for their workers; children must not inherit them.
  delete env.NODE_OPTIONS;
  delete env.VITEST;
  delete env.VITEST_POOL_ID;
  delete env.VITEST_WORKER_ID;
  // The ThreadSanitizer job preloads its runtime into the children only (the test runner's own
  // native bundler is not ours to check): see tooling/scripts/sanitize.mjs.
  if (env.DEVEXIT_TEST_PRELOAD) env.LD_PRELOAD = env.DEVEXIT_TEST_PRELOAD;
  for (const [k, v] of Object.entries(extra ?? {})) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

/**
 * Runs one child node process and collects what it did. Never hangs past timeoutMs (plus up to
 * 20 s of gdb where DEVEXIT_TEST_HANG_STACKS=1: see describeHang).
 */
export function runChild(options: ChildOptions): Promise<ChildResult> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const argv = [
    ...(options.nodeArgs ?? []),
    ...(options.script ? [options.script] : []),
    ...(options.args ?? []),
  ];
  const env = childEnv(options.env);
  const start = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, argv, { env, cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    let signalled = false;
    const pending = [...(options.signalOn ?? [])];
    const hasLine = (line: string) => stdout.split('\n').includes(line);
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (d: string) => {
      stdout += d;
      if (options.signalOnReady && !signalled && /(^|\n)ready(\n|$)/.test(stdout)) {
        signalled = true;
        child.kill(options.signalOnReady);
      }
      for (const s of [...pending]) {
        if (!hasLine(s.line)) continue;
        pending.splice(pending.indexOf(s), 1);
        if (s.delayMs) setTimeout(() => child.kill(s.signal), s.delayMs);
        else child.kill(s.signal);
      }
    });
    child.stderr.on('data', (d: string) => {
      stderr += d;
    });
    // Past the limit: what the child's threads were doing goes into its stderr, then SIGKILL.
    const timer = setTimeout(() => {
      timedOut = true;
      if (child.pid === undefined) {
        child.kill('SIGKILL');
        return;
      }
      void describeHang(child.pid).then((text) => {
        stderr += text;
        child.kill('SIGKILL');
      });
    }, timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({
        code,
        signal,
        stdout,
        stderr,
        report: parseReportLines(stderr),
        ms: performance.now() - start,
        endedAt: Date.now(),
        timedOut,
      });
    });
  });
}

/**
 * The state letter (R, S, D, Z, ...) in the text of a /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat
 * file: "pid (comm) S ...", where comm may itself hold spaces and parentheses, so the state is
 * the field after the last ") ". '?' for text without one.
 */
export function statState(stat: string): string {
  const at = stat.lastIndexOf(') ');
  return at < 0 ? '?' : (stat[at + 2] ?? '?');
}

/**
 * What a live process is doing, for a child about to be killed for hanging: each thread's name,
 * state and kernel wait channel (Linux's /proc; '' where there is none), and with
 * DEVEXIT_TEST_HANG_STACKS=1 every thread's backtrace from gdb (CI installs it): a hang that shows
 * once in a hundred loaded runs is then diagnosed from the run that saw it. Never throws; gdb gets
 * at most 20 s.
 */
export async function describeHang(pid: number): Promise<string> {
  const read = (path: string) => {
    try {
      return readFileSync(path, 'utf8').trim();
    } catch {
      return '?';
    }
  };
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return '';
  }
  const threads = tids.map((tid) => {
    const at = `/proc/${pid}/task/${tid}`;
    return `  ${tid} ${read(`${at}/comm`)} ${statState(read(`${at}/stat`))} ${read(`${at}/wchan`)}`;
  });
  let text = `\ndevexit-test: the child (pid ${pid}) hung; its threads (tid, name, state, wait channel):\n${threads.join('\n')}\n`;
  if (process.env.DEVEXIT_TEST_HANG_STACKS !== '1') return text;
  const args = ['-p', String(pid), '-batch', '-nx', '-ex', 'thread apply all bt 40'];
  text += await new Promise<string>((resolve) => {
    execFile(
      'gdb',
      args,
      { timeout: 20_000, killSignal: 'SIGKILL', maxBuffer: 16 << 20 },
      (err, out, errOut) => {
        resolve(out ? `${out}\n` : `devexit-test: gdb gave no backtrace: ${err?.message ?? ''} ${errOut}\n`);
      },
    );
  });
  return text;
}

/**
 * How many times to repeat a child: `n`, or DEVEXIT_TEST_RUNS where that is lower. The full
 * counts are the default (the README's test command); CI's main run, its second wgpu run and the
 * sanitizer jobs cap them. A count an issue's acceptance names (the vendor exit races: 30 per
 * path) is used as it is, not through this.
 */
export function testRuns(n: number): number {
  const raw = process.env.DEVEXIT_TEST_RUNS;
  if (raw === undefined || raw === '') return n;
  const cap = Number(raw);
  if (!Number.isInteger(cap) || cap < 1)
    throw new RangeError(
      `DEVEXIT_TEST_RUNS must be a positive integer (a cap on repeated runs); got ${JSON.stringify(raw)}`,
    );
  return Math.min(n, cap);
}

/** Runs `n` children, `concurrency` at a time (default 2: the CI machine has 2 cores). */
export async function runMany(n: number, options: ChildOptions, concurrency = 2): Promise<ChildResult[]> {
  const results: ChildResult[] = new Array(n);
  let next = 0;
  const lanes = Array.from({ length: Math.min(concurrency, n) }, async () => {
    for (;;) {
      const i = next++;
      if (i >= n) return;
      results[i] = await runChild(options);
    }
  });
  await Promise.all(lanes);
  return results;
}

/** A child "crashed" if a signal (other than one we expect) ended it or it exited 134/139. */
export function crashed(r: ChildResult, expectedSignal?: NodeJS.Signals): boolean {
  if (r.timedOut) return false;
  if (r.signal && r.signal !== expectedSignal) return true;
  return r.code === 134 || r.code === 139;
}

/**
 * A control whose crash is a race (it crashes in some runs, not all): children two at a time until
 * one is a hit (default: crashed), at most `max` runs. Not capped by DEVEXIT_TEST_RUNS: a control
 * capped to a few runs could pass by never crashing. Returns every run made.
 */
export async function runUntilHit(
  max: number,
  options: ChildOptions,
  hit: (r: ChildResult) => boolean = (r) => crashed(r),
): Promise<ChildResult[]> {
  const results: ChildResult[] = [];
  while (results.length < max && !results.some(hit))
    results.push(...(await runMany(Math.min(2, max - results.length), options)));
  return results;
}

/** Counts of what ended the children: `code 0`, `SIGSEGV`, `timeout`, ... */
export function outcomes(results: ChildResult[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of results) {
    const k = r.timedOut ? 'timeout' : r.signal ? r.signal : `code ${r.code}`;
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}

/** `type:index/service` -> how many times it closed, from a report. */
export function closeCounts(report: CloseReportEntry[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of report) {
    const k = `${e.device.type}:${e.device.index}/${e.service}`;
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}

/** How one child ended: its exit code, its signal, and whether it was killed for hanging. */
export function ending(r: ChildResult): Pick<ChildResult, 'code' | 'signal' | 'timedOut'> {
  return { code: r.code, signal: r.signal, timedOut: r.timedOut };
}

/** A compact, deep-equal-friendly summary of one child, for assertions with useful diffs. */
export function summary(r: ChildResult, expectedSignal?: NodeJS.Signals) {
  return {
    ...ending(r),
    crashed: crashed(r, expectedSignal),
    closes: closeCounts(r.report),
    failed: r.report
      .filter((e) => e.outcome !== 'ok')
      .map((e) => `${e.service}: ${e.outcome} ${e.error ?? ''}`),
  };
}
