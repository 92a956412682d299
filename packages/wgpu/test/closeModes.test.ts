import { join } from 'node:path';
import { type ChildResult, outcomes, runMany, summary, testRuns } from '@devexit/testkit';
import { describe, expect, it } from 'vitest';
import { unavailable } from './probe.js';

// The finish-or-drop table of the README, on real Dawn, in child processes (closeServices() marks
// the process as exiting, so it cannot run in the test process).
const fixture = join(__dirname, 'fixtures', 'closeServices.cjs');
const RUNS = testRuns(20);
const TIMEOUT_MS = 30_000;

function show(r: ChildResult): string {
  return `code=${r.code} signal=${r.signal} timedOut=${r.timedOut}\nstdout: ${r.stdout.slice(-400)}\nstderr: ${r.stderr.slice(-800)}`;
}

describe.skipIf(unavailable)('wgpu close modes (real Dawn)', () => {
  it(`closeServices() with work submitted, a launch recorded, a read and a flush pending: they reject with ERR_DEVEXIT_DEVICE_CLOSED, the queue closes once, exit 0 (${RUNS} runs)`, async () => {
    const results = await runMany(RUNS, { script: fixture, args: ['main'], timeoutMs: TIMEOUT_MS });
    const ms = results.map((r) => Number(/closeServices ms=(\d+)/.exec(r.stdout)?.[1]));
    console.log(
      `closeServices with work pending: ${JSON.stringify(outcomes(results))}, ms ${JSON.stringify(ms)}`,
    );
    for (const r of results) {
      expect(summary(r), show(r)).toMatchObject({ code: 0, signal: null, timedOut: false, crashed: false });
      expect(r.stdout, show(r)).toContain('closed wgpu:0/queue ok');
      expect(r.stdout, show(r)).toContain('read ERR_DEVEXIT_DEVICE_CLOSED');
      expect(r.stdout, show(r)).toContain('flush ERR_DEVEXIT_DEVICE_CLOSED');
    }
  });

  it('closeServices() on the main thread closes its own GPUDevice; a Worker keeps its device (10 runs)', async () => {
    const results = await runMany(testRuns(10), { script: fixture, args: ['worker'], timeoutMs: TIMEOUT_MS });
    console.log(`closeServices with a Worker's device open: ${JSON.stringify(outcomes(results))}`);
    for (const r of results) {
      expect(summary(r), show(r)).toMatchObject({ code: 0, signal: null, timedOut: false, crashed: false });
      expect(r.stdout, show(r)).toContain('closed wgpu:0/queue ok');
      expect(r.stdout, show(r)).toContain('main device closed true');
      expect(r.stdout, show(r)).toContain('worker read 5,5,5,5');
    }
  });
});
