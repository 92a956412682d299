import { describe, expect, it } from 'vitest';
import { type ChildResult, describeCell, summarizeRuns } from '../src/index.js';
import { run, show } from './helpers.js';

describe('devexit demo on the real cpu backend', () => {
  it('--json: four paths, every run with devexit ends as asked with one close; progress on stderr only', () => {
    const r = run(['demo', '--json', '--runs', '3', '--backend', 'cpu']);
    expect(r.status, show(r)).toBe(0);
    const result = JSON.parse(r.stdout);
    expect(result.ok).toBe(true);
    expect(result.skipped).toEqual([]);
    expect(result.rows.map((row: { path: string }) => row.path)).toEqual([
      'natural-end',
      'process-exit',
      'uncaught-exception',
      'sigint-handler',
    ]);
    for (const row of result.rows) {
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
    expect(r.stderr).toContain('cpu: natural end: 3 run(s) with devexit, 3 with DEVEXIT_GUARD=0');
  });

  it('text: the table on stdout, progress on stderr', () => {
    const r = run(['demo', '--runs', '1', '--backend', 'cpu']);
    expect(r.status, show(r)).toBe(0);
    const rows = r.stdout.split('\n').filter((l) => l.startsWith('cpu '));
    expect(rows).toHaveLength(4);
    for (const row of rows) expect(row).toMatch(/ {2}clean: exit (0|1|130), 1 closes, \d+ ms {2}/);
    expect(r.stdout).toContain('no stand-in');
    expect(r.stdout).not.toContain('run(s) with devexit');
    expect(r.stderr).toContain('run(s) with devexit');
  });

  it('a backend asked for that cannot run here: exit 1, says why', () => {
    const r = run(['demo', '--backend', 'cuda', '--runs', '1'], {
      DEVEXIT_CUDA_LIBRARY: '/nonexistent/libcuda.so.1',
    });
    expect(r.status, show(r)).toBe(1);
    expect(r.stdout).toContain('No backend ran.');
    expect(r.stdout).toContain('cuda: skipped: unavailable: library missing: /nonexistent/libcuda.so.1');
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
    expect(describeCell(c, true)).toMatch(/^CRASH 2\/5: /);
    expect(describeCell(summarizeRuns([result({ code: 70 })], 0), false)).toMatch(
      /^UNEXPECTED 1\/1: exit 70/,
    );
    expect(describeCell(summarizeRuns([result({ code: 1 })], 1), false)).toMatch(/^clean: exit 1, 10 ms$/);
  });
});
