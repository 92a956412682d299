// The real-GPU exit race: a retained context, a stream and a kernel in flight when the process
// exits. With devexit the queue closes first (the kernel finishes, queued work is dropped) and
// libcuda is never called after its teardown; without it, the queue thread is still inside
// libcuda when its teardown runs.
import { join } from 'node:path';
import { type ChildResult, crashed, outcomes, runMany, summary } from '@devexit/testkit';
import { describe, expect, it } from 'vitest';
import { fixtures, gpuEnv, label, requireGpu } from './gpu.js';

requireGpu();
const RUNS = 20;
const DEINIT = 'CUDA_ERROR_DEINITIALIZED';

const PATHS = [
  { path: 'natural', code: 0 },
  { path: 'exit', code: 0 },
  { path: 'uncaught', code: 1 },
  { path: 'sigint', code: 130, signalOnReady: 'SIGINT' as const },
] as const;

const child = (path: string, guard: boolean, signalOnReady?: NodeJS.Signals) => ({
  script: join(fixtures, 'gpuExit.cjs'),
  args: [path],
  env: { ...gpuEnv, DEVEXIT_CUDA_TRACE: '1', ...(guard ? {} : { DEVEXIT_GUARD: '0' }) },
  timeoutMs: 30_000,
  ...(signalOnReady ? { signalOnReady } : {}),
});

const tell = (r: ChildResult) =>
  `code=${r.code} signal=${r.signal} timedOut=${r.timedOut}\nstdout: ${r.stdout.slice(-300)}\nstderr: ${r.stderr.slice(-1000)}`;

describe(`cuda: a context, a stream and a kernel in flight at exit [${label}]`, () => {
  for (const p of PATHS) {
    it(`${p.path}: with devexit, exit ${p.code}, no crash, queue and compiler closed once, no call after libcuda's teardown; without it, the thread meets the teardown (${RUNS} runs each)`, async () => {
      const signal = 'signalOnReady' in p ? p.signalOnReady : undefined;
      const on = await runMany(RUNS, child(p.path, true, signal));
      const off = await runMany(RUNS, child(p.path, false, signal));
      const met = off.filter((r) => crashed(r) || r.stderr.includes(DEINIT)).length;
      const closeMs = on.flatMap((r) => r.report.filter((e) => e.service === 'queue').map((e) => e.ms));
      console.log(
        `gpu exit ${p.path}: devexit ${JSON.stringify(outcomes(on))}, queue close ${Math.min(...closeMs).toFixed(1)}-${Math.max(...closeMs).toFixed(1)} ms; ` +
          `DEVEXIT_GUARD=0 ${JSON.stringify(outcomes(off))}, ${met}/${RUNS} crashed or got error 4`,
      );
      for (const r of on) {
        expect(summary(r), tell(r)).toEqual({
          code: p.code,
          signal: null,
          timedOut: false,
          crashed: false,
          closes: { 'cuda:0/queue': 1, 'cuda-host:0/compiler': 1 },
          failed: [],
        });
        expect(r.stdout, tell(r)).toContain('busy');
        expect(r.stderr, tell(r)).not.toContain(DEINIT);
      }
      // Shows the assertions above able to fail. If a driver waits for the kernel in its own
      // teardown instead, this fails and says so: look at the figures above.
      expect(met, 'without devexit the queue thread meets libcuda teardown').toBeGreaterThanOrEqual(1);
    });
  }
});
