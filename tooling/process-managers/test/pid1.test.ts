import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { childEnv, testRuns } from '@devexit/testkit';
import { describe, expect, it, onTestFinished } from 'vitest';
import { alive } from './pm2';
import { APP, type AppRecord, appSummary, DRAINED, readRecords, repeat, waitForRecord } from './records';

// The app as PID 1 of its own PID namespace, as `node app.js` is in a container without an init
// (Docker, Kubernetes: the runtime sends SIGTERM to PID 1, SIGKILL after the grace period). The
// kernel delivers to PID 1 only the signals it has a handler for (kill(2)), so a signal whose
// handler is gone does nothing: devexit's re-raise cannot end the process there.

const RUNS = testRuns(10);
const unshare = ['--pid', '--fork', '--kill-child'];
// Where unshare cannot make a PID namespace (no privilege for it), these tests cannot run.
const probe = spawnSync('unshare', [...unshare, 'true'], { encoding: 'utf8' });
const cannot = probe.error ? String(probe.error) : probe.status !== 0 ? probe.stderr.trim() : undefined;

interface Pid1Run {
  records: AppRecord[];
  /** ms from the last close to the 'exit' event (the process's end, seen from inside). */
  endMs?: number;
}

const show = (r: Pid1Run) =>
  r.records
    .filter((x) => x.ev !== 'issued' && x.ev !== 'read')
    .map((x) => JSON.stringify(x))
    .join('\n');

/** Runs the app as PID 1; once ready, SIGTERM; then `after` decides when the run is over. */
async function asPid1(
  dir: string,
  i: number,
  env: Record<string, string>,
  after: (out: string) => Promise<void>,
): Promise<Pid1Run> {
  const out = join(dir, `app${i}.jsonl`);
  const child = spawn('unshare', [...unshare, process.execPath, APP], {
    env: childEnv({ FIXTURE_OUT: out, DEVEXIT_CPU_THREADS: '1', DEVEXIT_SIGNALS: undefined, ...env }),
    stdio: 'ignore',
  });
  const ended = new Promise((r) => child.once('exit', r));
  const guard = setTimeout(() => child.kill('SIGKILL'), 90_000); // --kill-child: node goes too
  try {
    await waitForRecord(out, 'ready', 60_000);
    // node's pid outside the namespace: unshare's one child.
    const pid = Number(readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim());
    process.kill(pid, 'SIGTERM');
    await after(out);
    child.kill('SIGKILL');
    await ended;
    const records = readRecords(out);
    const lastClose = records.filter((x) => x.ev === 'close').at(-1)?.t;
    const exit = records.find((x) => x.ev === 'exit')?.t;
    return { records, endMs: lastClose !== undefined && exit !== undefined ? exit - lastClose : undefined };
  } finally {
    clearTimeout(guard);
    if (child.pid && alive(child.pid)) child.kill('SIGKILL');
  }
}

describe.skipIf(cannot !== undefined)(
  `as PID 1 of a PID namespace (a container's entrypoint)${cannot ? ` [unshare: ${cannot}]` : ''}`,
  () => {
    const tempDir = () => {
      const dir = mkdtempSync(join(tmpdir(), 'devexit-pid1-'));
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      return dir;
    };

    it(`SIGTERM with DEVEXIT_SIGNALS: drained, each close once, then the process ends at once with exit code 143 (the re-raise cannot end PID 1) (${RUNS} runs)`, async () => {
      const dir = tempDir();
      const runs = await repeat(RUNS, (i) =>
        asPid1(dir, i, { DEVEXIT_SIGNALS: 'SIGINT,SIGTERM', DEVEXIT_TIMEOUT_MS: '4000' }, async (out) => {
          await waitForRecord(out, 'exit', 60_000);
        }),
      );
      for (const r of runs) {
        expect(appSummary(r.records), show(r)).toEqual({
          ...DRAINED('SIGTERM'),
          exitEvent: 143,
          failures: [],
        });
        // Today core waits FALLBACK_EXIT_MS (2 s) for the re-raised signal to end it first.
        expect(r.endMs, show(r)).toBeLessThan(1000);
      }
    }, 600_000);

    it(`control, without DEVEXIT_SIGNALS: SIGTERM does nothing to PID 1; its work goes on until SIGKILL (${RUNS} runs)`, async () => {
      const dir = tempDir();
      const runs = await repeat(RUNS, (i) =>
        asPid1(dir, i, {}, async (out) => {
          // Two more batches read after the signal: it went on working.
          const at = Math.max(
            ...readRecords(out)
              .filter((x) => x.ev === 'issued')
              .map((x) => x.k as number),
          );
          const until = Date.now() + 60_000;
          while (
            !readRecords(out).some((x) => x.ev === 'read' && (x.k as number) >= at + 2) &&
            Date.now() < until
          )
            await new Promise((r) => setTimeout(r, 25));
        }),
      );
      for (const r of runs) {
        const s = appSummary(r.records);
        expect({ shutdowns: s.shutdowns, closes: s.closes, exitEvent: s.exitEvent }, show(r)).toEqual({
          shutdowns: [],
          closes: {},
          exitEvent: null,
        });
        const reads = r.records.filter((x) => x.ev === 'read').length;
        expect(reads, show(r)).toBeGreaterThanOrEqual(2);
      }
    }, 600_000);
  },
);
