// `devexit doctor run` against programs that would crash, stall or mislead a naive doctor:
// half a GiB of stderr, 600 MB without a newline, report lines that are not reports, a daemon
// that keeps the program's output open, a command that cannot start.
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunReport } from '../src/run.js';
import { bin, run, show } from './helpers.js';

const fixture = (name: string) => join(__dirname, 'fixtures', name);

interface Watched {
  status: number | null;
  stdout: string;
  ms: number;
  /** The doctor's peak resident memory (VmHWM), in MiB. */
  peakMiB: number;
}

/** The doctor in a child, its stderr (the program's output passed through) thrown away. */
function watchDoctor(args: string[], timeoutMs = 120_000): Promise<Watched> {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  delete env.NODE_PATH;
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, 'doctor', 'run', ...args], {
      env,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let stdout = '';
    let peak = 0;
    const sample = () => {
      try {
        const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
        if (hwm) peak = Math.max(peak, Number(hwm[1]) / 1024);
      } catch {
        // Gone already.
      }
    };
    const sampler = setInterval(sample, 50);
    const killer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.on('error', reject);
    child.on('exit', () => sample());
    child.on('close', (status) => {
      clearInterval(sampler);
      clearTimeout(killer);
      resolve({ status, stdout, ms: performance.now() - started, peakMiB: Math.round(peak) });
    });
  });
}

const reportOf = (w: Watched) => JSON.parse(w.stdout) as RunReport;
const tell = (w: Watched) =>
  `status=${w.status} ${Math.round(w.ms)} ms, peak ${w.peakMiB} MiB\n${w.stdout.slice(0, 3000)}`;

describe('devexit doctor run with hostile programs', () => {
  it('520 MiB of stderr in 1 KiB lines: streamed through, bounded memory, the last 64 KiB kept, verdict clean', async () => {
    const w = await watchDoctor(['--json', '--', fixture('floodStderr.cjs'), '520', 'lines']);
    console.log(`520 MiB of stderr lines: ${Math.round(w.ms)} ms, doctor peak RSS ${w.peakMiB} MiB`);
    expect(w.status, tell(w)).toBe(0);
    const r = reportOf(w);
    expect(r, tell(w)).toMatchObject({ verdict: 'clean', code: 0, malformedCount: 0 });
    expect(r.stderrTail.length).toBe(64 * 1024);
    expect(r.stderrTail).toMatch(/^x*\n(x{1023}\n)+$/);
    // Before: one string of all of it, RangeError past ~512 MiB at 1.9 GB.
    expect(w.peakMiB, tell(w)).toBeLessThan(256);
  });

  it('600 MB on stderr without a newline: not a hang, bounded memory', async () => {
    const w = await watchDoctor([
      '--json',
      '--timeout',
      '60000',
      '--',
      fixture('floodStderr.cjs'),
      '572',
      'noNewline',
    ]);
    console.log(
      `572 MiB (600 MB) without a newline: ${Math.round(w.ms)} ms, doctor peak RSS ${w.peakMiB} MiB`,
    );
    expect(w.status, tell(w)).toBe(0);
    const r = reportOf(w);
    expect(r, tell(w)).toMatchObject({ verdict: 'clean', hung: false, code: 0 });
    expect(r.stderrTail).toBe('x'.repeat(64 * 1024));
    expect(w.peakMiB, tell(w)).toBeLessThan(256);
  });

  it('report lines that are not reports: ignored and named in the verdict; a glued real one is kept', () => {
    const json = run(['doctor', 'run', '--json', '--', fixture('malformedReport.cjs')]);
    expect(json.status, show(json)).toBe(0);
    const r = JSON.parse(json.stdout) as RunReport;
    expect(r.verdict).toBe('clean');
    expect(r.malformedCount).toBe(2);
    expect(r.malformed[0]).toEqual({
      line: 'devexit:report {not json',
      why: expect.stringMatching(/^not JSON/),
    });
    expect(r.malformed[1]).toEqual({ line: 'devexit:report [1,2,3]', why: 'not a JSON object' });
    expect(r.summary).toMatch(
      /^exited cleanly with code 0; 2 malformed devexit:report line\(s\) ignored \(not JSON/,
    );
    expect(r.closes.map((c) => `${c.device.type}:${c.device.index}/${c.service} ${c.outcome}`)).toEqual([
      'cpu:0/queue ok',
    ]);
    // The program's own text passes through, the text before the glued report line too.
    expect(json.stderr).toContain('devexit:report {not json\n');
    expect(json.stderr).toContain('progress 50%the end\n');
    expect(json.stderr).toContain('the end\n');

    const text = run(['doctor', 'run', '--', fixture('malformedReport.cjs')]);
    expect(text.status, show(text)).toBe(0);
    expect(text.stdout).toContain(
      'verdict      exited cleanly with code 0; 2 malformed devexit:report line(s) ignored',
    );
    expect(text.stdout).toContain('  malformed    "devexit:report {not json": not JSON');
    expect(text.stdout).not.toMatch(/SyntaxError|^\s+at /m);
  });

  it('a daemon that holds its stdout and stderr: the run ends when the program exits, well within --timeout', async () => {
    for (let i = 0; i < 3; i++) {
      const w = await watchDoctor(['--json', '--timeout', '2000', '--', fixture('daemon.cjs')], 20_000);
      const r = reportOf(w);
      const daemon = Number(/daemon (\d+)/.exec(r.stderrTail + w.stdout)?.[1] ?? NaN);
      try {
        expect(w.status, tell(w)).toBe(0);
        expect(r, tell(w)).toMatchObject({ verdict: 'clean', code: 0, hung: false, outputHeld: true });
        expect(w.ms, tell(w)).toBeLessThan(2000);
      } finally {
        if (Number.isInteger(daemon)) process.kill(daemon, 'SIGKILL');
      }
    }
  });

  it('a command that cannot start: verdict not-started in text and --json, exit 127', () => {
    const notExecutable = join(tmpdir(), `devexit-not-executable-${process.pid}`);
    writeFileSync(notExecutable, '#!/bin/sh\nexit 0\n');
    chmodSync(notExecutable, 0o644);
    for (const [command, error] of [
      ['devexit-no-such-program', /ENOENT/],
      [notExecutable, /EACCES/],
      [join(tmpdir(), 'devexit-no-such-script.cjs'), /^no such file: /],
      [join(tmpdir(), 'devexit-no-such-script.mts'), /^no such file: /],
    ] as const) {
      const json = run(['doctor', 'run', '--json', '--', command]);
      expect(json.status, show(json)).toBe(127);
      const r = JSON.parse(json.stdout) as RunReport;
      expect(r).toMatchObject({
        verdict: 'not-started',
        code: null,
        signal: null,
        crashed: false,
        hung: false,
      });
      expect(r.error).toMatch(error);
      const text = run(['doctor', 'run', '--', command]);
      expect(text.status, show(text)).toBe(127);
      expect(text.stdout).toContain(`verdict      COULD NOT START ${JSON.stringify(command)}: `);
      expect(text.stdout).not.toContain('exited with code');
    }
  });

  it('a file here named without "./" that is not a script: not-started says it is looked up in PATH and how to run it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'devexit-path-'));
    writeFileSync(join(dir, 'app.py'), 'print(1)\n');
    const r = spawnSync(process.execPath, [bin, 'doctor', 'run', '--json', '--', 'app.py'], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.status, show(r)).toBe(127);
    expect((JSON.parse(r.stdout) as RunReport).error).toMatch(
      /ENOENT: "app\.py" is a file here, but a command without a "\/" is looked up in PATH: run it with its interpreter \("node app\.py" for a script\), or as "\.\/app\.py" if it is executable$/,
    );
  });
});
