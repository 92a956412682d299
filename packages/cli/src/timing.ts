import type { CloseReportEntry } from '@devexit/core';
import type { ReceivedReport } from './output.js';

/** A close as the probe saw it published (t: ms after the run started, when it was published). */
export interface ProbeClose {
  pid: number;
  t: number;
  device: { type: string; index: number };
  service: string;
  layer: string;
  ms: number;
  /** The close's outcome and error, as devexit published it (not sent by older probes). */
  outcome?: string;
  error?: string;
}

/** A registration as the probe saw it: which registry holds the service's close. */
export interface ProbeRegister {
  pid: number;
  device: { type: string; index: number };
  service: string;
  registry: 'js' | 'native' | string;
}

/** When one close ran, for the timeline. */
export interface CloseTiming {
  pid: number;
  /** `cpu:0` */
  device: string;
  service: string;
  layer: string;
  outcome: CloseReportEntry['outcome'];
  /** ms after the run started. */
  startMs: number;
  ms: number;
  /**
   * measured: a JS close, published as it ended; reconstructed: a native close, from the
   * durations of its batch (devices in parallel, one device's services one after another);
   * approximate: only its report line was seen (the TLS or atexit layer), placed when it was read.
   */
  timing: 'measured' | 'reconstructed' | 'approximate';
}

const keyOf = (pid: number, d: { type: string; index: number }, service: string, layer?: string) =>
  `${pid} ${d.type}:${d.index}/${service}${layer === undefined ? '' : ` ${layer}`}`;

/**
 * When each reported close ran. The report says how long a close took, not when it began: JS
 * closes are published as each ends; native closes are published together once all of them
 * ended (which closes are native: registered so, or not among the JS closes the process had
 * when its exit began, `jsAtExit`), so their starts are rebuilt from the close engine's rule: they begin once the JS closes
 * of the same run ended (or when the exit began: `began`, per pid), devices in parallel, a
 * device's services one after another, in the order reported.
 */
export function closeTimings(
  reports: ReceivedReport[],
  published: ProbeClose[],
  registered: ProbeRegister[],
  began: Map<number, number> = new Map(),
  jsAtExit: Map<number, Set<string>> = new Map(),
): CloseTiming[] {
  const registry = new Map<string, string>();
  for (const r of registered) {
    if (r.device && typeof r.service === 'string')
      registry.set(keyOf(r.pid, r.device, r.service), r.registry);
  }
  // Registered as native, or not among the JS closes the process had when its exit began.
  const isNative = (c: ProbeClose) => {
    const r = registry.get(keyOf(c.pid, c.device, c.service));
    const js = jsAtExit.get(c.pid);
    return (
      r === 'native' ||
      (r === undefined && js !== undefined && !js.has(`${c.device.type}:${c.device.index}/${c.service}`))
    );
  };
  const starts = new Map<string, { start: number; timing: CloseTiming['timing'] }>();
  let batch: ProbeClose[] = [];
  // Per pid: when its last JS close ended.
  const jsEnd = new Map<number, number>();
  const flush = () => {
    const first = batch[0];
    if (!first) return;
    const totals = new Map<string, number>();
    for (const c of batch) {
      const d = `${c.device.type}:${c.device.index}`;
      totals.set(d, (totals.get(d) ?? 0) + c.ms);
    }
    // Published after the batch ended: it cannot have begun later than that allows.
    const latest = Math.min(...batch.map((c) => c.t)) - Math.max(...totals.values());
    const after = jsEnd.get(first.pid) ?? began.get(first.pid);
    const begin = after === undefined ? latest : Math.min(after, latest);
    const at = new Map<string, number>();
    for (const c of batch) {
      const d = `${c.device.type}:${c.device.index}`;
      const start = at.get(d) ?? begin;
      at.set(d, start + c.ms);
      starts.set(keyOf(c.pid, c.device, c.service, c.layer), { start, timing: 'reconstructed' });
    }
    batch = [];
  };
  for (const c of published) {
    if (!c.device || typeof c.ms !== 'number') continue;
    const native = isNative(c);
    const last = batch[batch.length - 1];
    if (!native || (last && (last.pid !== c.pid || last.layer !== c.layer))) flush();
    if (native) batch.push(c);
    else {
      starts.set(keyOf(c.pid, c.device, c.service, c.layer), { start: c.t - c.ms, timing: 'measured' });
      jsEnd.set(c.pid, c.t);
    }
  }
  flush();
  return reports.map(({ entry, at }) => {
    const pid = typeof entry.pid === 'number' ? entry.pid : 0;
    const known = starts.get(keyOf(pid, entry.device, entry.service, entry.layer));
    return {
      pid,
      device: `${entry.device.type}:${entry.device.index}`,
      service: entry.service,
      layer: entry.layer,
      outcome: entry.outcome,
      startMs: round(known ? known.start : at - entry.ms),
      ms: entry.ms,
      timing: known ? known.timing : 'approximate',
    };
  });
}

const round = (ms: number) => Math.round(ms * 1000) / 1000;
