import { join } from 'node:path';
import { testRuns } from '@devexit/testkit';
import { describe, expect, it, onTestFinished } from 'vitest';
import { type Pm2Daemon as Daemon, Pm2Daemon } from './pm2';
import {
  APP,
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
  waitForRecord,
} from './records';

// A devexit app under a real PM2 (7.0.4, its own daemon per test): `pm2 start` from an ecosystem
// file, then `pm2 stop`, which sends SIGINT (PM2's default, PM2_KILL_SIGNAL) and SIGKILLs the app
// if it still runs after kill_timeout (lib/God/Methods.js: killProcess, processIsDead).
// DEVEXIT_SIGNALS comes from the ecosystem entry's env, as a user would set it.

const KILL_TIMEOUT_MS = 10_000;
// Against that grace period: a drain, then the closes, each bounded by the deadline (up to about
// twice DEVEXIT_TIMEOUT_MS in all), well inside kill_timeout.
const DEVEXIT_TIMEOUT_MS = '4000';
const RUNS = testRuns(10);

interface Pm2Run {
  name: string;
  records: AppRecord[];
  /** From PM2's "Stopping app" (it signals the app and starts kill_timeout) to the app's end. */
  stopMs?: number;
  /** The whole `pm2 stop` command, the CLI's own start included (seconds on a loaded machine). */
  cliMs: number;
  /** What PM2 recorded: `pm2 jlist`'s status and exit_code, and its log's "exited" line. */
  pm2: { status?: string; exitCode?: number; exited?: { code: number; signal: string }; sigkill: boolean };
}

const show = (r: Pm2Run, daemon: Daemon) =>
  `stop ${r.stopMs} ms (pm2 stop: ${r.cliMs.toFixed(0)} ms), pm2 ${JSON.stringify(r.pm2)}\napp:\n${r.records
    .filter((x) => x.ev !== 'issued' && x.ev !== 'read')
    .map((x) => JSON.stringify(x))
    .join('\n')}\npm2.log (end):\n${daemon.log().slice(-2000)}`;

/** How PM2 saw the stop (its log); the daemon wrote it before it answered `pm2 stop`, the file may lag. */
async function stopped(daemon: Daemon, name: string) {
  const until = Date.now() + 5_000;
  for (;;) {
    const s = daemon.stopped(name);
    if (s || Date.now() > until) return s;
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function stopUnderPm2(
  daemon: Daemon,
  name: string,
  execMode: 'fork' | 'cluster',
  signals: boolean,
  pids: number[],
): Promise<Pm2Run> {
  const out = join(daemon.home, `${name}.jsonl`);
  await daemon.start({
    name,
    script: APP,
    exec_mode: execMode,
    kill_timeout: KILL_TIMEOUT_MS,
    env: {
      FIXTURE_OUT: out,
      DEVEXIT_TIMEOUT_MS,
      DEVEXIT_CPU_THREADS: '1', // the queue thread alone: two apps at once on two cores
      ...(signals ? { DEVEXIT_SIGNALS: 'SIGINT,SIGTERM' } : {}),
    },
  });
  // Stopped only once two batches are queued: a read is in flight whenever the signal comes.
  const pid = appPid(await waitForRecord(out, 'ready', 60_000));
  if (pid) pids.push(pid);
  const cli = await daemon.must(['stop', name], KILL_TIMEOUT_MS + 30_000);
  const seen = await stopped(daemon, name);
  return {
    name,
    records: readRecords(out),
    stopMs: seen?.ms,
    cliMs: cli.ms,
    pm2: {
      exited: seen && { code: seen.code, signal: seen.signal },
      sigkill: daemon.log().includes(`Process with pid ${pid} still alive`),
    },
  };
}

/** `runs` times start, then stop; then what `pm2 jlist` says of each (one call for all). */
async function stopRuns(daemon: Daemon, execMode: 'fork' | 'cluster', signals: boolean, pids: number[]) {
  const runs = await repeat(RUNS, (i) => stopUnderPm2(daemon, `app${i}`, execMode, signals, pids));
  const list = await daemon.jlist();
  for (const r of runs) {
    const env = list.find((p) => p.name === r.name)?.pm2_env;
    r.pm2 = { status: env?.status, exitCode: env?.exit_code, ...r.pm2 };
  }
  return runs;
}

/** A daemon for this test, killed when it ends (passed or not); what survives fails it. */
async function daemonForTest(pids: number[]): Promise<Daemon> {
  const daemon = new Pm2Daemon();
  onTestFinished(async () => {
    expect(await daemon.kill(pids, KILL_TIMEOUT_MS), 'still running after pm2 kill').toEqual([]);
  });
  await daemon.launch();
  return daemon;
}

describe.each(['fork', 'cluster'] as const)(
  'PM2 %s mode: pm2 stop (SIGINT, kill_timeout 10 s)',
  (execMode) => {
    it(`with DEVEXIT_SIGNALS=SIGINT,SIGTERM: the read in flight resolves with its value, each close runs once (in shutdown), the app ends by SIGINT well inside kill_timeout, no SIGKILL (${RUNS} runs)`, async () => {
      const pids: number[] = [];
      const daemon = await daemonForTest(pids);
      const runs = await stopRuns(daemon, execMode, true, pids);
      figures(`PM2 ${execMode}, DEVEXIT_SIGNALS`, runs, (r) => ({
        stop: r.stopMs,
        drain: drainMs(r.records),
        'pm2 stop command': r.cliMs,
      }));
      for (const r of runs) {
        expect({ ...appSummary(r.records), pm2: r.pm2 }, show(r, daemon)).toEqual({
          ...DRAINED('SIGINT'),
          exitEvent: null, // no 'exit' event: the re-raised SIGINT ended it
          failures: [],
          // PM2 records a death by signal as exit_code 0 (code || 0), the signal in its log.
          pm2: { status: 'stopped', exitCode: 0, exited: { code: 0, signal: 'SIGINT' }, sigkill: false },
        });
        // PM2's process container adds no SIGINT/SIGTERM listener of its own: only devexit's, so
        // devexit ends the process itself.
        const only = { SIGINT: ['onSignal'], SIGTERM: ['onSignal'] };
        expect(listenersSeen(r.records), show(r, daemon)).toEqual({ start: only, shutdown: only });
        expect(r.stopMs, show(r, daemon)).toBeLessThan(KILL_TIMEOUT_MS);
      }
    }, 600_000);

    it(`control, without DEVEXIT_SIGNALS: SIGINT ends the app at once, the read in flight is lost, no close runs (${RUNS} runs)`, async () => {
      const pids: number[] = [];
      const daemon = await daemonForTest(pids);
      const runs = await stopRuns(daemon, execMode, false, pids);
      figures(`PM2 ${execMode}, control`, runs, (r) => ({ stop: r.stopMs, 'pm2 stop command': r.cliMs }));
      for (const r of runs) {
        expect({ ...lossSummary(r.records), pm2: r.pm2 }, show(r, daemon)).toEqual({
          ...LOST,
          pm2: { status: 'stopped', exitCode: 0, exited: { code: 0, signal: 'SIGINT' }, sigkill: false },
        });
        const none = { SIGINT: [], SIGTERM: [] };
        expect(listenersSeen(r.records), show(r, daemon)).toEqual({ start: none });
      }
    }, 600_000);
  },
);
