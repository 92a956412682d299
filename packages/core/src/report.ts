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

/**
 * What is printed for a close: the report line on request (DEVEXIT_REPORT), and a failure line
 * at exit (closeServices() reports failures through warnings instead).
 */
export function reportText(entry: CloseReportEntry, mode: ReportMode, failures: boolean): string {
  let text = '';
  if (failures && entry.outcome === 'error') {
    text += `devexit: close of ${entry.device.type}:${entry.device.index}/${entry.service} failed: ${entry.error}\n`;
  }
  if (mode !== 'off') text += `${formatReportLine(entry, mode)}\n`;
  return text;
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
