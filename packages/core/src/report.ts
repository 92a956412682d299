import type { ReportMode } from './settings.js';

/** One close, as the report tells it. */
export interface CloseReportEntry {
  device: { type: string; typeId: number; index: number };
  service: string;
  /** Which layer ran it: js-exit, really-exit, worker-exit, tls, atexit, explicit, ... */
  layer: string;
  ms: number;
  outcome: 'ok' | 'error' | 'timeout';
  pid: number;
  error?: string;
  /**
   * shutdown() only, when the service says: true when its queued work all ran before the
   * deadline; false when what was left was dropped (or a JS drain did not finish).
   */
  drained?: boolean;
  /** shutdown() only, native services: how many queued commands were dropped. */
  dropped?: number;
}

/**
 * The report line (DEVEXIT_REPORT=1: text, =json: `devexit:report {...}`). The native registry
 * prints the same format for the closes it runs (addon/report.cc; a test holds the two together).
 */
export function formatReportLine(entry: CloseReportEntry, mode: ReportMode): string {
  if (mode === 'json') return `devexit:report ${JSON.stringify(entry)}`;
  const dev = `${entry.device.type}:${entry.device.index}/${entry.service}`;
  return `devexit: ${entry.outcome} ${dev} in ${entry.ms.toFixed(2)} ms (${entry.layer})`;
}

/** Parses `devexit:report {...}` lines out of a child's stderr (tests and tools). */
export function parseReportLines(stderr: string): CloseReportEntry[] {
  const out: CloseReportEntry[] = [];
  for (const line of stderr.split('\n')) {
    const at = line.indexOf('devexit:report ');
    if (at >= 0) out.push(JSON.parse(line.slice(at + 'devexit:report '.length)) as CloseReportEntry);
  }
  return out;
}
