// "A program that launches kernels and then frees its buffers" exits as it asked to, on the
// stand-in libcuda in both teardown modes: queued frees are dropped at exit (never run before the
// join), the running command finishes, and no call reaches libcuda after its teardown.
import { join } from 'node:path';
import { standinCudaPath } from '@devexit/standins-cuda';
import {
  type ChildResult,
  crashed,
  outcomes,
  runMany,
  runUntilHit,
  summary,
  testRuns,
} from '@devexit/testkit';
import { describe, expect, it } from 'vitest';
import { fixtures, skipped, unavailable } from './runtimes.js';

const RUNS = testRuns(20);
const DEINIT = 'CUDA_ERROR_DEINITIALIZED';
const BOTH = { 'cuda:0/queue': 1, 'cuda-host:0/compiler': 1 };

const PATHS = [
  { path: 'natural', code: 0, stdout: 'busy' },
  { path: 'exit', code: 0, stdout: 'busy' },
  { path: 'uncaught', code: 1, stdout: 'busy' },
  // closeServices() closes both services with JS alive; the program then ends by itself.
  {
    path: 'closeServices',
    code: 0,
    stdout: 'pending read ERR_DEVEXIT_DEVICE_CLOSED; alloc after close ERR_DEVEXIT_EXITING',
  },
] as const;

const child = (path: string, teardown: string, env: Record<string, string> = {}) => ({
  script: join(fixtures, 'freesChild.cjs'),
  args: [path],
  env: {
    DEVEXIT_CUDA_LIBRARY: standinCudaPath,
    DEVEXIT_STANDIN_CUDA_TEARDOWN: teardown,
    DEVEXIT_CUDA_TRACE: '1',
    ...env,
  },
  timeoutMs: 30_000,
});

const tell = (r: ChildResult) =>
  `code=${r.code} signal=${r.signal} timedOut=${r.timedOut}\nstdout: ${r.stdout.slice(-300)}\nstderr: ${r.stderr.slice(-1000)}`;

const why = unavailable('standin');

for (const teardown of ['deinit', 'crash'] as const) {
  describe(`cuda: a program that launches kernels and then frees its buffers (stand-in libcuda, teardown: ${teardown})`, () => {
    if (why) return skipped(why);
    for (const p of PATHS) {
      it(`${p.path}: exit ${p.code}, no crash, each service closed once, libcuda never called after its teardown, ${RUNS} runs (stand-in libcuda)`, async () => {
        const results = await runMany(RUNS, child(p.path, teardown));
        console.log(`frees ${teardown} ${p.path}: ${JSON.stringify(outcomes(results))}`);
        for (const r of results) {
          expect(summary(r), tell(r)).toEqual({
            code: p.code,
            signal: null,
            timedOut: false,
            crashed: false,
            closes: BOTH,
            failed: [],
          });
          expect(r.stdout, tell(r)).toContain(p.stdout);
          expect(r.stderr, tell(r)).not.toContain(DEINIT);
        }
      });
    }

    it(`control: with DEVEXIT_GUARD=0 the same program ${teardown === 'crash' ? 'crashes' : 'calls libcuda after its teardown (CUDA_ERROR_DEINITIALIZED)'} (stand-in libcuda)`, async () => {
      for (const p of PATHS.filter((x) => x.path !== 'closeServices')) {
        // A race with the teardown: runs until one is a hit, at most 20.
        const isHit = (r: ChildResult) => (teardown === 'crash' ? crashed(r) : r.stderr.includes(DEINIT));
        const results = await runUntilHit(20, child(p.path, teardown, { DEVEXIT_GUARD: '0' }), isHit);
        const hits = results.filter(isHit);
        console.log(
          `frees ${teardown} ${p.path} DEVEXIT_GUARD=0: ${hits.length}/${results.length} ${teardown === 'crash' ? 'crashed' : 'saw error 4'} ${JSON.stringify(outcomes(results))}`,
        );
        for (const r of results) expect(r.timedOut, tell(r)).toBe(false);
        expect(hits.length, `${p.path}: the assertion above is able to fail`).toBeGreaterThanOrEqual(1);
      }
    });
  });
}
