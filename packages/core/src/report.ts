/** One close, as the report tells it. */
export interface CloseReportEntry {
  device: { type: string; typeId: number; index: number };
  service: string;
  /** Which exit layer ran it: js-exit, worker-exit, tls, atexit, explicit, ... */
  layer: string;
  ms: number;
  outcome: 'ok' | 'error' | 'timeout';
  error?: string;
  pid: number;
}

export type ReportMode = 'off' | 'text' | 'json';

export function reportModeFromEnv(value: string | undefined): ReportMode {
  if (!value || value === '0') return 'off';
  return value === 'json' ? 'json' : 'text';
}

/** The line format shared with the native layers (stderr, DEVEXIT_REPORT=1 or =json). */
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
