import type { CloseReportEntry, ReportMode } from './types.js';

export type { CloseReportEntry } from './types.js';

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
