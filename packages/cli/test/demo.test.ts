import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { type ChildResult, type DemoResult, describeCell, summarizeRuns } from '../src/index.js';
import { run, show } from './helpers.js';

// The vendor runtimes on this machine (CI installs them): the demo's real rows need them. Asked
// in a child, as the demo asks: the test process loads no vendor library.
const probe = (name: string): { versions?: Record<string, string> } => {
  const r = spawnSync(
    process.execPath,
    ['-e', `require('@devexit/${name}').backend.probe().then((p) => console.log(JSON.stringify(p)))`],
    { cwd: __dirname, encoding: 'utf8', timeout: 60_000 },
  );
  return JSON.parse(r.stdout || '{}');
};
const required = (process.env.DEVEXIT_REQUIRE_BACKENDS ?? '').split(',').map((s) => s.trim());
const hipHere = probe('hip').versions?.runtime !== undefined;
const nvrtc = probe('cuda').versions?.nvrtc;
const nvrtcHere = nvrtc !== undefined && nvrtc !== 'missing';
const realMissing = [...(hipHere ? [] : ['libamdhip64 (ROCm)']), ...(nvrtcHere ? [] : ['NVRTC'])];
if (realMissing.length && (required.includes('hip') || required.includes('cuda')))
  throw new Error(
    `DEVEXIT_REQUIRE_BACKENDS=${required.join(',')} but ${realMissing.join(' and ')} missing here`,
  );

/** Everything the demo printed, stdout and stderr, as a log (not a terminal) shows it. */
const lines = (r: { stdout: string; stderr: string }) =>
  `${r.stderr}${r.stdout}`.split('\n').filter((l, i, all) => i < all.length - 1 || l !== '');

const parse = (r: { stdout: string }) => JSON.parse(r.stdout) as DemoResult;

describe('devexit demo: crashes without devexit, none with it', () => {
  it.skipIf(realMissing.length > 0)(
    `on the real runtimes here (ROCm's libamdhip64, NVRTC; no GPU): every run with devexit clean, crashes without it; one screen${realMissing.length ? ` (skipped: ${realMissing.join(' and ')} not installed)` : ''}`,
    () => {
      const r = run(['demo', '--runs', '3']);
      expect(r.status, show(r)).toBe(0);
      const out = lines(r);
      expect(out.length, show(r)).toBeLessThanOrEqual(55);
      const table = out.filter((l) => / (clean|CRASH|HANG|UNEXPECTED) \d+\/\d+/.test(l));
      expect(table, show(r)).toHaveLength(8);
      expect(r.stdout).toMatch(
        /^hip · real ROCm \d+\.\d+ {2,}natural end \(exit 0\) +clean 3\/3 · 1 close +/m,
      );
      expect(r.stdout).toMatch(
        /^cuda · real NVRTC \d+\.\d+ {2,}natural end \(exit 0\) +clean 3\/3 · 1 close +/m,
      );
      expect(r.stdout).not.toContain('stand-in');
      for (const runtime of ['hip', 'cuda']) {
        const rows = r.stdout
          .split('\n')
          .filter((l) => l.includes(' clean '))
          .slice(runtime === 'hip' ? 0 : 4, runtime === 'hip' ? 4 : 8);
        expect(
          rows.some((l) => / CRASH \d+\/\d+ · (SIGSEGV|SIGABRT|SIGBUS)/.test(l)),
          `${runtime}: some run without devexit crashed\n${show(r)}`,
        ).toBe(true);
      }
      // One row's exit drawn: the page names the picture's runtime, with devexit and without.
      const page = /drawn \(the closes against the deadline\): (\S+)/.exec(r.stdout)?.[1];
      expect(page && existsSync(page), show(r)).toBe(true);
      const html = readFileSync(page!, 'utf8');
      expect(html).toContain('<h2>with devexit</h2>');
      expect(html).toContain('<h2>without devexit (DEVEXIT_GUARD=0)</h2>');
      expect(html).toContain('hip-host:0 / compiler');
    },
  );

  it('no vendor runtime (libamdhip64 and NVRTC hidden): the stand-ins, labelled so in every row; crashes without devexit, none with it', () => {
    const r = run(['demo', '--runs', '2', '--json', '--no-timeline'], {
      DEVEXIT_HIP_LIBRARY: '/nonexistent/devexit-test/libamdhip64.so',
      DEVEXIT_NVRTC_LIBRARY: '/nonexistent/devexit-test/libnvrtc.so',
    });
    expect(r.status, show(r)).toBe(0);
    const result = parse(r);
    expect(result.ok).toBe(true);
    expect([...new Set(result.rows.map((row) => row.runtime))]).toEqual([
      'hip · stand-in libamdhip64',
      'cuda · stand-in libcuda',
    ]);
    for (const row of result.rows) {
      expect(row.standIn).toBe(true);
      expect(row.withDevexit, `${row.runtime} ${row.path}`).toMatchObject({
        crashes: 0,
        hangs: 0,
        unexpected: 0,
        closes: 1,
      });
    }
    for (const runtime of ['hip · stand-in libamdhip64', 'cuda · stand-in libcuda']) {
      const off = result.rows
        .filter((row) => row.runtime === runtime)
        .map((row) => row.guardDisabled.crashes);
      expect(
        off.reduce((a, b) => a + b, 0),
        `${runtime} without devexit`,
      ).toBeGreaterThan(0);
    }
    const text = run(['demo', '--runs', '1', '--no-timeline', '--backend', 'hip'], {
      DEVEXIT_HIP_LIBRARY: '/nonexistent/devexit-test/libamdhip64.so',
    });
    expect(text.stdout).toMatch(/^hip · stand-in libamdhip64 +natural end/m);
    expect(text.stdout.replace(/\s+/g, ' ')).toContain(
      'a stand-in libamdhip64 (a test double from tooling/standins-hip)',
    );
  });
});

describe('devexit demo on the real cpu backend', () => {
  it('--json: four paths, every run with devexit ends as asked with one close; progress on stderr only', () => {
    const r = run(['demo', '--json', '--runs', '3', '--backend', 'cpu', '--no-timeline']);
    expect(r.status, show(r)).toBe(0);
    const result = parse(r);
    expect(result.ok).toBe(true);
    expect(result.skipped).toEqual([]);
    expect(result.rows.map((row) => row.path)).toEqual([
      'natural-end',
      'process-exit',
      'uncaught-exception',
      'sigint-handler',
    ]);
    for (const row of result.rows) {
      expect(row.runtime).toBe('cpu · real');
      expect(row.withDevexit, row.path).toMatchObject({
        runs: 3,
        endings: { [`exit ${row.expectedCode}`]: 3 },
        crashes: 0,
        hangs: 0,
        unexpected: 0,
        closes: 1,
      });
      // The same program without devexit: no close reported (the comparison can tell them apart).
      expect(row.guardDisabled, row.path).toMatchObject({ runs: 3, closes: 0 });
    }
    expect(r.stderr).toBe('devexit demo: cpu · real: 4 exit paths, 3 runs each with devexit and without\n');
  });

  it('text: the table on stdout, progress on stderr (every path with --verbose)', () => {
    const r = run(['demo', '--runs', '1', '--backend', 'cpu', '--no-timeline', '--verbose']);
    expect(r.status, show(r)).toBe(0);
    const rows = r.stdout.split('\n').filter((l) => / clean 1\/1 · 1 close /.test(l));
    expect(rows).toHaveLength(4);
    expect(r.stdout).toMatch(/^cpu · real +natural end \(exit 0\) +clean 1\/1 · 1 close +clean 1\/1$/m);
    expect(r.stdout).not.toContain('run(s) with devexit');
    expect(r.stderr).toContain('cpu · real: natural end: 1 run(s) with devexit, 1 with DEVEXIT_GUARD=0');
  });

  it('a backend asked for that cannot run here: exit 1, says why', () => {
    const r = run(['demo', '--backend', 'wgpu', '--runs', '1'], {
      VK_ICD_FILENAMES: '/nonexistent/icd.json',
      __EGL_VENDOR_LIBRARY_FILENAMES: '/nonexistent/egl.json',
      DEVEXIT_WGPU_BACKEND: undefined,
    });
    expect(r.status, show(r)).toBe(1);
    expect(r.stdout).toContain('No backend ran.');
    expect(r.stdout).toMatch(/wgpu: skipped: unavailable: no adapter/);
    expect(r.stderr).toContain('devexit demo: no backend could run');
  });
});

describe('how the demo judges runs', () => {
  const result = (over: Partial<ChildResult>): ChildResult => ({
    code: 0,
    signal: null,
    report: [],
    stderrTail: '',
    ms: 10,
    timedOut: false,
    ...over,
  });

  it('a signal, 134/139, a hang and a wrong exit code are each counted and named', () => {
    const c = summarizeRuns(
      [
        result({}),
        result({ code: null, signal: 'SIGSEGV', stderrTail: 'Segmentation fault\n' }),
        result({ code: 134 }),
        result({ code: null, signal: 'SIGKILL', timedOut: true }),
        result({ code: 70, stderrTail: 'devexit: cpu is unavailable\n' }),
      ],
      0,
    );
    expect(c).toMatchObject({
      runs: 5,
      crashes: 2,
      hangs: 1,
      unexpected: 1,
      firstError: 'Segmentation fault',
    });
    expect(c.endings).toEqual({ 'exit 0': 1, SIGSEGV: 1, 'exit 134': 1, 'hang (killed)': 1, 'exit 70': 1 });
    expect(describeCell(c, true)).toBe('CRASH 2/5 · SIGSEGV 1, exit 134 1, hang (killed) 1, exit 70 1');
    expect(describeCell(summarizeRuns([result({ code: 70 })], 0), false)).toBe('UNEXPECTED 1/1 · exit 70');
    expect(describeCell(summarizeRuns([result({ code: 1 })], 1), true)).toBe('clean 1/1 · 0 closes');
  });
});
