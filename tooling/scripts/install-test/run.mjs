// Child processes and the result table of install-test.mjs.
import { spawn, spawnSync } from 'node:child_process';

/** Runs a command to its end: exit code (a signal counts as 128), output, milliseconds. */
export function run(argv, { cwd, env, timeout = 300_000 } = {}) {
  const t = Date.now();
  const r = spawnSync(argv[0], argv.slice(1), { cwd, env, encoding: 'utf8', timeout, maxBuffer: 64 << 20 });
  const out = `${r.stdout ?? ''}${r.stderr ?? ''}`;
  return {
    code: r.status ?? (r.signal ? 128 : 1),
    out,
    stdout: r.stdout ?? '',
    stderr: r.stderr ?? '',
    ms: Date.now() - t,
    error: r.error,
  };
}

/** run(), without blocking: the TypeScript builds and the packs run two or three at a time. */
export function runAsync(argv, { cwd, env, timeout = 300_000 } = {}) {
  return new Promise((resolve) => {
    const t = Date.now();
    const child = spawn(argv[0], argv.slice(1), { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeout);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal ? 128 : 1), out: stdout + stderr, stdout, stderr, ms: Date.now() - t });
    });
  });
}

export async function pool(items, limit, fn) {
  const results = [];
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: limit }, worker));
  return results;
}

/** The last line of `text` that parses as a JSON object. */
export function lastJson(text) {
  const line = text
    .trim()
    .split('\n')
    .reverse()
    .find((l) => l.startsWith('{'));
  try {
    return line ? JSON.parse(line) : undefined;
  } catch {
    return undefined;
  }
}

/** One row per (package manager, step), one column per check: ok, FAIL or blank (not run). */
export function formatTable(rows) {
  const names = [...new Set(rows.flatMap((r) => r.checks.map((c) => c.name)))];
  const header = ['pm', 'step', 'install s', 'step s', ...names];
  const table = rows.map((r) => [
    r.pm,
    r.step,
    r.installSeconds,
    r.seconds ?? '',
    ...names.map((n) => {
      const c = r.checks.filter((x) => x.name === n);
      if (!c.length) return '';
      return c.every((x) => x.ok) ? 'ok' : 'FAIL';
    }),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => String(row[i]).length)));
  const line = (cells) => cells.map((c, i) => String(c).padEnd(widths[i])).join('  ');
  const notes = [];
  for (const r of rows) {
    const step = r.step.split(' ')[0];
    for (const [name, p] of Object.entries(r.probes)) notes.push(`${r.pm} ${step}: ${name} probe: ${p}`);
    if (r.others?.length) notes.push(`${r.pm} ${step}: scripts npm ran (not ours): ${r.others.join(', ')}`);
  }
  return [line(header), ...table.map(line), ...notes].join('\n');
}
