import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunReport } from '../src/run.js';
import { run, show } from './helpers.js';

// `devexit doctor run`: the CLI in a child, running a program in a grandchild.
const fixture = (name: string) => join(__dirname, 'fixtures', name);
const doctorRun = (args: string[], env: Record<string, string | undefined> = {}) => {
  const r = run(['doctor', 'run', ...args], { DEVEXIT_REQUIRE_BACKENDS: undefined, ...env });
  return { ...r, report: args.includes('--json') ? (JSON.parse(r.stdout) as RunReport) : undefined };
};

describe('devexit doctor run', () => {
  it('a clean exit with a busy cpu device: code 0, the queue closed at exit, the layers armed (--json)', () => {
    const r = doctorRun(['--json', '--', fixture('cpuExit.cjs')]);
    expect(r.status, show(r)).toBe(0);
    const report = r.report!;
    expect(report).toMatchObject({
      code: 0,
      signal: null,
      verdict: 'clean',
      crashed: false,
      hung: false,
      atExit: false,
    });
    expect(
      report.closes.map((c) => [`${c.device.type}:${c.device.index}/${c.service}`, c.layer, c.outcome]),
    ).toEqual([['cpu:0/queue', 'js-exit', 'ok']]);
    expect(report.closes[0]!.ms).toBeGreaterThanOrEqual(0);
    expect(report.processes).toHaveLength(1);
    const p = report.processes[0]!;
    expect(p.devexit).toEqual({ core: true, native: true });
    expect(p.exitBegan).toMatchObject({ layer: 'js-exit', code: 0 });
    expect(p.guard?.tls).toEqual({ armed: true, by: 'init_array' });
    expect(p.guard?.layers).toEqual({ js: true, tls: true, atexit: true });
    // The program's stdout went to stderr: stdout is the report alone.
    expect(r.stderr).toContain('work queued; exiting');
  });

  it('text: the ending, the verdict, each close with its duration, the layers of each process', () => {
    const r = doctorRun(['--', process.execPath, fixture('cpuExit.cjs'), '3']);
    expect(r.status, show(r)).toBe(0); // an exit code is the program's business, not a crash
    expect(r.stdout).toContain('work queued; exiting');
    expect(r.stdout).toMatch(/^ {2}ended {8}with code 3 after [\d.]+ ms$/m);
    expect(r.stdout).toContain('verdict      exited with code 3 (not a crash)');
    // What started it (process.exit(3), seen by the probe), then devexit's layer.
    expect(r.stdout).toMatch(
      /^ {2}exit {9}began at [\d.]+ ms \(process\.exit\(3\) → js-exit, code 3\); the process ended [\d.]+ ms later$/m,
    );
    expect(r.stdout).toMatch(/^ {4}cpu:0\/queue +ok in \d+\.\d\d ms \(js-exit\)$/m);
    expect(r.stdout).toMatch(
      /^ {2}layers {7}pid \d+: js on, main-thread guard armed \(init_array\), atexit on \(load\); deadline 3000 ms$/m,
    );
    expect(r.stdout).not.toContain('devexit:report');
  });

  it("a program that sets DEVEXIT_REPORT itself: no report lines, so the closes devexit's channel saw are shown, said as such", () => {
    const r = doctorRun(['--', process.execPath, fixture('cpuExit.cjs'), '0', 'own-report']);
    expect(r.status, show(r)).toBe(0);
    // The program's own text report went to its stderr, as it asked.
    expect(r.stderr).toMatch(/devexit: ok cpu:0\/queue in [\d.]+ ms \(js-exit\)/);
    expect(r.stdout).toContain(
      "closes       none reported as DEVEXIT_REPORT=json lines (the doctor sets it; did the program set DEVEXIT_REPORT itself?); devexit's diagnostics channel saw 1 (only closes run while JavaScript ran):",
    );
    expect(r.stdout).toMatch(/^ {4}cpu:0\/queue +ok in \d+\.\d\d ms \(js-exit\)$/m);
    expect(r.stdout).not.toContain('none reported (devexit not loaded');
    const json = doctorRun(['--json', '--', fixture('cpuExit.cjs'), '0', 'own-report']);
    expect(json.report?.closes, show(json)).toEqual([]);
    expect(json.report?.unreportedCloses?.map((c) => [c.service, c.layer, c.outcome])).toEqual([
      ['queue', 'js-exit', 'ok'],
    ]);
  });

  it('tells a crash at exit (the crash-reproducing stand-in runtime, guard off) from a clean exit (guard on); 5 runs each', () => {
    const env = { DEVEXIT_STANDIN_TEARDOWN_MS: '200' };
    for (let i = 0; i < 5; i++) {
      const off = doctorRun(['--json', '--', fixture('standinExit.cjs')], { ...env, DEVEXIT_GUARD: '0' });
      expect(off.status, show(off)).toBe(1);
      expect(off.report, show(off)).toMatchObject({
        signal: 'SIGSEGV',
        verdict: 'crash-at-exit',
        crashed: true,
        atExit: true,
        closes: [],
      });
      expect(off.report!.processes[0]!.guard?.layers).toEqual({ js: false, tls: false, atexit: false });

      const on = doctorRun(['--json', '--', fixture('standinExit.cjs')], env);
      expect(on.status, show(on)).toBe(0);
      expect(on.report, show(on)).toMatchObject({ code: 0, signal: null, verdict: 'clean', crashed: false });
      expect(
        on.report!.closes.map((c) => `${c.device.type}:${c.device.index}/${c.service} ${c.outcome}`),
      ).toEqual(['standin:0/loop ok']);
      expect(on.report!.processes[0]!.guard?.atexitHooks).toEqual(['load', 'after standin']);
    }
    const text = doctorRun(['--', fixture('standinExit.cjs')], { ...env, DEVEXIT_GUARD: '0' });
    expect(text.stdout).toContain(
      'verdict      CRASHED AT EXIT: ended by SIGSEGV after it began to exit (a service still running while a runtime tore itself down?)',
    );
  });

  it('a hang at exit is killed after --exit-timeout and said so; a program that never exits after --timeout', () => {
    const atExit = doctorRun(['--json', '--exit-timeout', '1000', '--', fixture('hangAtExit.cjs')]);
    expect(atExit.status, show(atExit)).toBe(1);
    expect(atExit.report).toMatchObject({
      verdict: 'hang-at-exit',
      hung: true,
      atExit: true,
      signal: 'SIGKILL',
    });
    expect(atExit.report!.exitMs).toBeGreaterThanOrEqual(1000);

    const running = doctorRun(['--json', '--timeout', '1500', '--', fixture('forever.cjs')]);
    expect(running.status, show(running)).toBe(1);
    expect(running.report).toMatchObject({ verdict: 'hang', hung: true, atExit: false });
    expect(running.report!.processes).toEqual([]);
  });

  it('bad usage exits 2; a command that cannot start exits 127', () => {
    for (const args of [
      [],
      ['--timeout', '0', '--', 'x'],
      ['--exit-timeout', 'soon', '--', 'x'],
      ['--nope', '--', 'x'],
    ]) {
      const r = doctorRun(args);
      expect(r.status, show(r)).toBe(2);
      expect(r.stderr).toMatch(/^devexit doctor: /);
    }
    const missing = doctorRun(['--json', '--', 'devexit-no-such-program']);
    expect(missing.status, show(missing)).toBe(127);
    expect(missing.report).toMatchObject({ verdict: 'not-started', error: expect.stringMatching(/ENOENT/) });
  });
});
