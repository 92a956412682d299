import type { CloseReportEntry } from '@devexit/core';
import type { RunReport } from './run.js';
import { describeExitStart, mainProcess } from './runFormat.js';

/** One close on the timeline: ms after the exit began. */
export interface TimelineBar {
  startMs: number;
  ms: number;
  outcome: CloseReportEntry['outcome'];
  layer: string;
  timing: 'measured' | 'reconstructed' | 'approximate';
}

/** One row: a device and one of its services. */
export interface TimelineRow {
  device: string;
  service: string;
  bars: TimelineBar[];
}

/** What the picture shows; every time is ms after the exit began (negative: before it). */
export interface Timeline {
  command: string;
  /** What started the exit, e.g. `signal SIGINT → process.exit(130) → js-exit, code 130`. */
  startedBy: string;
  /** Earlier events that led to it: a signal, process.exit(n), an uncaught error. */
  triggers: Array<{ what: string; ms: number }>;
  /** The layer that ran first ('js-exit', 'shutdown', 'exit event' when devexit did not run). */
  layer: string | undefined;
  /** How the process ended: `exit code 0`, `SIGSEGV`. */
  ending: string;
  crashed: boolean;
  /** When it ended; undefined when it never began to exit (nothing to place it against). */
  endMs: number | undefined;
  /** The close deadline in force, when the program had @devexit/native loaded. */
  deadlineMs: number | undefined;
  /** When the last close ended. */
  closesEndMs: number | undefined;
  /** devexit's exit layer (or shutdown()) as a whole, as it measured itself: from 0 to ms. */
  layerSpan: { layer: string; ms: number } | undefined;
  rows: TimelineRow[];
  verdict: RunReport['verdict'];
  summary: string;
  /** Whether the process began to exit at all (false: a crash or hang before it). */
  exitBegan: boolean;
}

const round = (ms: number) => Math.round(ms * 1000) / 1000;

/** The timeline of a `devexit doctor run` report: its main process's exit and closes. */
export function timelineOf(r: RunReport): Timeline {
  const main = mainProcess(r);
  const began = main?.exitBegan;
  const t0 = began?.ms ?? Math.min(r.ms, ...r.closeTimes.map((c) => c.startMs));
  const rows: TimelineRow[] = [];
  for (const c of r.closeTimes) {
    if (main && c.pid !== main.pid && r.processes.length > 1) continue;
    let row = rows.find((x) => x.device === c.device && x.service === c.service);
    if (!row) {
      row = { device: c.device, service: c.service, bars: [] };
      rows.push(row);
    }
    row.bars.push({
      startMs: round(c.startMs - t0),
      ms: c.ms,
      outcome: c.outcome,
      layer: c.layer,
      timing: c.timing,
    });
  }
  rows.sort((a, b) => a.device.localeCompare(b.device, 'en', { numeric: true }) || 0);
  const ends = rows.flatMap((row) => row.bars.map((b) => b.startMs + b.ms));
  const ending = r.signal ? r.signal : r.code === null ? 'did not end' : `exit code ${r.code}`;
  return {
    command: r.command.join(' '),
    startedBy: main && began ? describeExitStart(main) : 'no exit began',
    triggers: (began?.trigger ?? []).map((t) => ({ what: t.what, ms: round(t.ms - t0) })),
    layer: began?.layer,
    ending: r.hung ? `${ending} (killed: ${r.verdict})` : ending,
    crashed: r.crashed,
    endMs: began || rows.length ? round(r.ms - t0) : undefined,
    deadlineMs: main?.guard?.timeoutMs,
    closesEndMs: ends.length ? round(Math.max(...ends)) : undefined,
    layerSpan:
      began && main?.exitLayerMs !== undefined ? { layer: began.layer, ms: main.exitLayerMs } : undefined,
    rows,
    verdict: r.verdict,
    summary: r.summary,
    exitBegan: began !== undefined,
  };
}
