import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ChildResult, runChild, testRuns } from '@devexit/testkit';
import { describe, expect, it, onTestFinished } from 'vitest';
import { alive } from './pm2';
import {
  type AppRecord,
  appPid,
  appSummary,
  DRAINED,
  drainMs,
  figures,
  LOST,
  listenersSeen,
  lossSummary,
  readRecords,
  repeat,
} from './records';

// A devexit app as the worker of a Node cluster primary (fixtures/clusterPrimary.cjs), stopped
// once its work is queued: worker.kill() (on Node 20: SIGTERM at once, no disconnect first) or
// cluster.disconnect() (no signal at all). The grace period is the primary's: past it, SIGKILL.

const GRACE_MS = 10_000;
const DEVEXIT_TIMEOUT_MS = '4000'; // drain + closes: up to about 2 × 4 s, inside the grace period
const RUNS = testRuns(10);
const primary = join(__dirname, '..', 'fixtures', 'clusterPrimary.cjs');

interface ClusterRun {
  child: ChildResult;
  records: AppRecord[];
  /** The primary's line: the worker's 'exit' event and when it came. */
  worker?: {
    code: number | null;
    signal: string | null;
    exitedAfterDisconnect: boolean;
    ms: number | null;
    graceExpired: boolean;
  };
}

const show = (r: ClusterRun) =>
  `primary: code=${r.child.code} signal=${r.child.signal} timedOut=${r.child.timedOut}\n${r.child.stdout}${r.child.stderr.slice(-2000)}\napp:\n${r.records
    .filter((x) => x.ev !== 'issued' && x.ev !== 'read')
    .map((x) => JSON.stringify(x))
    .join('\n')}`;

/** Runs the primary `RUNS` times; a worker left running fails the test (and is killed). */
async function stopWorkers(
  action: 'kill' | 'disconnect' | 'group',
  graceMs: number,
  env: Record<string, string>,
): Promise<ClusterRun[]> {
  const dir = mkdtempSync(join(tmpdir(), 'devexit-cluster-'));
  const pids: number[] = [];
  onTestFinished(() => {
    const survivors = pids.filter(alive);
    for (const pid of survivors) process.kill(pid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    expect(survivors, 'workers still running').toEqual([]);
  });
  return repeat(RUNS, async (i) => {
    const out = join(dir, `worker${i}.jsonl`);
    const child = await runChild({
      script: primary,
      args: [action, String(graceMs)],
      env: {
        FIXTURE_OUT: out,
        DEVEXIT_TIMEOUT_MS,
        DEVEXIT_CPU_THREADS: '1',
        DEVEXIT_SIGNALS: undefined,
        ...env,
      },
      timeoutMs: graceMs + 60_000,
    });
    const pid = appPid(readRecords(out));
    if (pid) pids.push(pid);
    // A worker whose primary died goes on alone: its end is what the test looks at.
    const until = Date.now() + graceMs + 30_000;
    while (pid && alive(pid) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    const records = readRecords(out);
    const line = child.stdout.split('\n').find((l) => l.startsWith('{'));
    return { child, records, worker: line ? JSON.parse(line) : undefined };
  });
}

const primaryEnded = (r: ClusterRun) => ({
  code: r.child.code,
  signal: r.child.signal,
  timedOut: r.child.timedOut,
});
const workerEnd = (r: ClusterRun) => {
  const { ms: _ms, ...end } = r.worker ?? { ms: null };
  return end;
};
const only = { SIGINT: ['onSignal'], SIGTERM: ['onSignal'] };
const none = { SIGINT: [], SIGTERM: [] };

/** Each run drained (primary ended cleanly) and its worker ended as `worker` says, in time. */
function expectDrained(
  runs: ClusterRun[],
  signal: string | null,
  exitEvent: number | null,
  worker: NonNullable<ReturnType<typeof workerEnd>>,
) {
  for (const r of runs) {
    expect(primaryEnded(r), show(r)).toEqual({ code: 0, signal: null, timedOut: false });
    expect({ ...appSummary(r.records), worker: workerEnd(r) }, show(r)).toEqual({
      ...DRAINED(signal),
      exitEvent,
      failures: [],
      worker,
    });
    expect(r.worker?.ms, show(r)).toBeLessThan(GRACE_MS);
  }
}

/** Each run lost its read in flight, ran no close, and its worker ended as `worker` says. */
function expectLost(runs: ClusterRun[], worker: NonNullable<ReturnType<typeof workerEnd>>) {
  for (const r of runs) {
    expect(primaryEnded(r), show(r)).toEqual({ code: 0, signal: null, timedOut: false });
    expect({ ...lossSummary(r.records), worker: workerEnd(r) }, show(r)).toEqual({ ...LOST, worker });
  }
}

describe("Node's cluster: worker.kill() (SIGTERM)", () => {
  it(`with DEVEXIT_SIGNALS=SIGINT,SIGTERM: the read in flight resolves with its value, each close runs once, the worker ends by SIGTERM inside the grace period (${RUNS} runs)`, async () => {
    const runs = await stopWorkers('kill', GRACE_MS, { DEVEXIT_SIGNALS: 'SIGINT,SIGTERM' });
    figures('cluster worker.kill(), DEVEXIT_SIGNALS', runs, (r) => ({
      stop: r.worker?.ms ?? undefined,
      drain: drainMs(r.records),
    }));
    expectDrained(runs, 'SIGTERM', null, {
      code: null,
      signal: 'SIGTERM',
      exitedAfterDisconnect: false,
      graceExpired: false,
    });
    // Node's cluster adds no signal listener to a worker: devexit's are the only ones.
    for (const r of runs) expect(listenersSeen(r.records), show(r)).toEqual({ start: only, shutdown: only });
  }, 600_000);

  it(`control, without DEVEXIT_SIGNALS: SIGTERM ends the worker at once, the read in flight is lost, no close runs (${RUNS} runs)`, async () => {
    const runs = await stopWorkers('kill', GRACE_MS, {});
    expectLost(runs, { code: null, signal: 'SIGTERM', exitedAfterDisconnect: false, graceExpired: false });
    for (const r of runs) expect(listenersSeen(r.records), show(r)).toEqual({ start: none });
  }, 600_000);
});

describe("Node's cluster: cluster.disconnect() (no signal)", () => {
  it(`a worker that calls shutdown() on its 'disconnect' event: the read in flight resolves with its value, each close runs once, the worker ends by itself with code 0 inside the grace period (${RUNS} runs)`, async () => {
    const runs = await stopWorkers('disconnect', GRACE_MS, { FIXTURE_MODE: 'disconnect' });
    figures('cluster.disconnect(), shutdown() on disconnect', runs, (r) => ({
      stop: r.worker?.ms ?? undefined,
      drain: drainMs(r.records),
    }));
    // Exit code 0: the event loop emptied, a natural end; the exit layer had nothing left.
    expectDrained(runs, null, 0, { code: 0, signal: null, exitedAfterDisconnect: true, graceExpired: false });
  }, 600_000);

  it(`control, a worker with DEVEXIT_SIGNALS but no 'disconnect' handler: no signal comes, its work goes on, the grace period runs out and SIGKILL loses the read; no close runs (${RUNS} runs)`, async () => {
    // A short grace period: nothing ends this worker before it.
    const runs = await stopWorkers('disconnect', 2_000, { DEVEXIT_SIGNALS: 'SIGINT,SIGTERM' });
    expectLost(runs, { code: null, signal: 'SIGKILL', exitedAfterDisconnect: true, graceExpired: true });
  }, 600_000);
});

describe('SIGTERM to the primary and the worker at once (a process-group kill: systemd, Ctrl-C)', () => {
  it(`a primary that listens to SIGTERM and waits for its worker: the worker drains, each close runs once, it ends by SIGTERM (${RUNS} runs)`, async () => {
    const runs = await stopWorkers('group', GRACE_MS, {
      DEVEXIT_SIGNALS: 'SIGINT,SIGTERM',
      PRIMARY_WAITS: '1',
    });
    expectDrained(runs, 'SIGTERM', null, {
      code: null,
      signal: 'SIGTERM',
      exitedAfterDisconnect: false,
      graceExpired: false,
    });
  }, 600_000);

  it(`a primary that dies at once: Node's cluster ends the orphaned worker with process.exit(0) in the middle of devexit's drain; the read in flight is lost, each close still runs once (${RUNS} runs)`, async () => {
    // Batches of 400 launches (seconds of queue work each): the primary's end closes the channel
    // at once, long before the drain could finish what is queued.
    const runs = await stopWorkers('group', GRACE_MS, {
      DEVEXIT_SIGNALS: 'SIGINT,SIGTERM',
      FIXTURE_LAUNCHES: '400',
    });
    for (const r of runs) {
      expect(primaryEnded(r), show(r)).toEqual({ code: null, signal: 'SIGTERM', timedOut: false });
      const s = appSummary(r.records);
      // Whether devexit's shutdown began before the channel closed is a race between the two
      // events; what follows does not depend on it.
      const closes = Object.fromEntries(Object.entries(s.closes).map(([k, v]) => [k, v.length]));
      expect(
        { readsLost: s.readsLost > 0, closes, appCloses: s.appCloses, exitEvent: s.exitEvent },
        show(r),
      ).toEqual({
        readsLost: true,
        closes: { queue: 1, app: 1 },
        appCloses: 1,
        exitEvent: 0,
      });
    }
  }, 600_000);
});
