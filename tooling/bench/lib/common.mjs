// What every section of the bench shares: medians, child processes, the machine, result rows.
import { spawn, spawnSync } from 'node:child_process';
import { cpus, freemem, loadavg, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const benchDir = join(dirname(fileURLToPath(import.meta.url)), '..');
export const fixture = (name) => join(benchDir, 'fixtures', name);

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/**
 * The median of paired differences b[i] - a[i] over samples taken in the same round of
 * interleave(): neighbours in time share the machine's state (its load, its other users), which
 * a difference of two medians does not cancel. On this shared VM a bare node's CPU time moves by
 * 2x between minutes; the paired median's spread is a fraction of the two medians'.
 */
export function pairedMedian(a, b, field) {
  const n = Math.min(a.length, b.length);
  return median(Array.from({ length: n }, (_, i) => b[i][field] - a[i][field]));
}

/** Runs `rounds` rounds of every variant, interleaved (a, b, c, a, b, c, ...), and returns the
 * samples per variant. A variant is a function returning a number (sync or async). */
export async function interleave(rounds, variants) {
  const out = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
  for (let r = 0; r < rounds; r++) {
    for (const [k, f] of Object.entries(variants)) out[k].push(await f(r));
  }
  return out;
}

/** A node child running `args`; resolves with its stdout parsed as JSON (the last line). */
export function nodeJson(args, { env = {}, timeout = 60_000 } = {}) {
  const r = spawnSync(process.execPath, args, {
    cwd: benchDir,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout,
    maxBuffer: 16 << 20,
  });
  if (r.status !== 0) {
    throw new Error(
      `bench child ${args.join(' ')} failed (${r.status} ${r.signal}): ${r.stderr.slice(-2000)}`,
    );
  }
  const last = r.stdout.trim().split('\n').pop();
  return JSON.parse(last);
}

/**
 * A child whose exit is timed from outside: it prints `exitAt <epoch ms>` (performance.timeOrigin
 * + now) just before it calls process.exit(); the parent takes the time it sees the child gone.
 * Resolves { exitMs, wallMs, out } once the child's output is all read (what it prints while
 * exiting may arrive after its exit is seen).
 */
export function timedExit(args, { env = {}, timeout = 60_000 } = {}) {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const c = spawn(process.execPath, args, {
      cwd: benchDir,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    const timer = setTimeout(() => c.kill('SIGKILL'), timeout);
    c.stdout.on('data', (d) => {
      out += d;
    });
    c.stderr.on('data', (d) => {
      err += d;
    });
    c.on('error', reject);
    let gone = 0;
    c.on('exit', () => {
      gone = performance.timeOrigin + performance.now();
    });
    c.on('close', (code, signal) => {
      clearTimeout(timer);
      const at = /exitAt (\S+)/.exec(out);
      if (code !== 0 || !at) {
        reject(
          new Error(`bench child ${args.join(' ')}: code ${code} signal ${signal}: ${err.slice(-2000)}`),
        );
        return;
      }
      resolve({ exitMs: gone - Number(at[1]), wallMs: performance.now() - start, out });
    });
  });
}

/** The machine, and whether it is loaded: figures measured on a loaded machine say so. */
export function machine() {
  const c = cpus();
  return {
    cpu: c[0]?.model ?? 'unknown',
    cores: c.length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    freeGiB: Math.round(freemem() / 2 ** 30),
    loadavg: loadavg().map((x) => Math.round(x * 100) / 100),
    platform: `${process.platform} ${process.arch}`,
    node: process.version,
  };
}

/** Loaded: the 1-minute load average above 75% of the cores, at the start or the end of a run. */
export const isLoaded = (loadavg1, cores) => loadavg1 > 0.75 * cores;

/**
 * One result: `value` next to `baseline` (measured in the same run), `ratio` = value / baseline,
 * and whether `target` (a predicate over the row, described by `target`'s text) is met.
 */
export function row({ name, value, unit, baseline, baselineName, target, met, detail }) {
  const ratio = baseline ? value / baseline : null;
  const r = { name, value, unit, baseline, baselineName, ratio, target, detail };
  r.met = met === undefined ? null : Boolean(met(r));
  return r;
}

/** Numbers for people: 3 significant digits, thousands grouped. */
export function fmt(x) {
  if (x === null || x === undefined || Number.isNaN(x)) return '—';
  const a = Math.abs(x);
  if (a >= 1000) return Math.round(x).toLocaleString('en-US');
  if (a >= 100) return x.toFixed(0);
  if (a >= 10) return x.toFixed(1);
  if (a >= 1) return x.toFixed(2);
  return x.toPrecision(2);
}
