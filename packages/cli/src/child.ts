import { spawn } from 'node:child_process';
import { type CloseReportEntry, parseReportLines } from '@devexit/core';

export interface ChildOptions {
  script: string;
  args: string[];
  env?: Record<string, string>;
  /** Kill the child (SIGKILL) past this many ms. */
  timeoutMs: number;
  /** Send this signal once the child prints `ready` on stdout. */
  signalOnReady?: NodeJS.Signals;
}

export interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The closes the child reported (it runs with DEVEXIT_REPORT=json). */
  report: CloseReportEntry[];
  stderrTail: string;
  ms: number;
  timedOut: boolean;
}

/** Runs one demo child and collects how it ended. Never hangs past timeoutMs. */
export function runChild(options: ChildOptions): Promise<ChildResult> {
  const env: NodeJS.ProcessEnv = { ...process.env, DEVEXIT_REPORT: 'json', ...options.env };
  // Preloads meant for the CLI itself must not change the children.
  delete env.NODE_OPTIONS;
  const start = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [options.script, ...options.args], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    let signalled = false;
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (d: string) => {
      stdout += d;
      if (options.signalOnReady && !signalled && /(^|\n)ready(\n|$)/.test(stdout)) {
        signalled = true;
        child.kill(options.signalOnReady);
      }
    });
    child.stderr.on('data', (d: string) => {
      stderr += d;
    });
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, options.timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({
        code,
        signal,
        report: parseReportLines(stderr),
        stderrTail: stderr.slice(-2000),
        ms: performance.now() - start,
        timedOut,
      });
    });
  });
}

/** Runs `n` children, two at a time. */
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
