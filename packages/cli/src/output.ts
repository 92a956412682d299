import type { Writable } from 'node:stream';
import type { CloseReportEntry } from '@devexit/core';

/** The prefix of a close report line (DEVEXIT_REPORT=json). */
export const REPORT_PREFIX = 'devexit:report ';
/** What `doctor run` keeps of the program's own stderr: its last 64 KiB. */
export const TAIL_BYTES = 64 * 1024;
/** A doctor line longer than this cannot be one of ours: it is passed through as the program's. */
export const MAX_DOCTOR_LINE = 64 * 1024;
/** Report entries kept; a program that prints more is hostile or broken, and is told so. */
export const MAX_REPORTS = 10_000;
/** Malformed report lines named in the report (all are counted). */
export const MAX_MALFORMED = 20;

export interface Malformed {
  /** The line, cut to 120 characters. */
  line: string;
  why: string;
}

/** A report line with the time the doctor read it (ms, performance.timeOrigin based). */
export interface ReceivedReport {
  entry: CloseReportEntry;
  at: number;
}

export const now = () => performance.timeOrigin + performance.now();

const cut = (s: string, n = 120) => (s.length > n ? `${s.slice(0, n)}…` : s);

/** Whether a parsed report line has the shape of a close report entry. */
function reportShape(v: unknown): string | undefined {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return 'not a JSON object';
  const e = v as Record<string, unknown>;
  const d = e.device as Record<string, unknown> | undefined;
  if (typeof d !== 'object' || d === null || typeof d.type !== 'string' || typeof d.index !== 'number')
    return 'no device { type, index }';
  if (typeof e.service !== 'string') return 'no service';
  if (typeof e.layer !== 'string') return 'no layer';
  if (typeof e.ms !== 'number' || !Number.isFinite(e.ms)) return 'no ms';
  if (e.outcome !== 'ok' && e.outcome !== 'error' && e.outcome !== 'timeout') return 'no outcome';
  return undefined;
}

/**
 * Takes a program's stderr apart as it streams: the doctor's probe lines and the close report
 * lines are taken out, everything else passes through at once (a line that cannot be one of ours
 * is not held back until its newline). Memory stays bounded whatever the program writes: a
 * partial line is held only while it may still be a doctor line, and only up to MAX_DOCTOR_LINE.
 */
export class StderrSplitter {
  readonly reports: ReceivedReport[] = [];
  readonly malformed: Malformed[] = [];
  malformedCount = 0;
  reportsDropped = 0;
  /** The last TAIL_BYTES characters of what passed through. */
  tail = '';
  private partial = '';
  private passing = false;
  /** What passes through from the chunk being read: handed on once per chunk. */
  private pending: string[] = [];

  constructor(
    private readonly prefixes: { probe: string },
    private readonly onProbe: (json: string, at: number) => void,
    private readonly pass: (text: string) => void,
  ) {}

  write(chunk: string): void {
    this.split(chunk);
    this.flush();
  }

  private split(chunk: string): void {
    let start = 0;
    this.found = [-2, -2];
    while (start < chunk.length) {
      const nl = chunk.indexOf('\n', start);
      let end = nl < 0 ? chunk.length : nl + 1;
      // Written after text that has no newline (the probe and the report write at exit), a
      // doctor line is glued to it: it starts a line of its own there.
      const glued = this.gluedAt(chunk, start, end);
      if (glued >= 0) end = glued;
      const piece = chunk.slice(start, end);
      const complete = glued >= 0 || nl >= 0;
      start = end;
      if (this.passing) {
        this.out(piece);
        if (complete) this.passing = false;
        continue;
      }
      this.partial += piece;
      if (complete) {
        const line = glued >= 0 ? this.partial : this.partial.slice(0, -1);
        this.partial = '';
        this.line(line, glued < 0);
      } else if (!this.mayBeOurs(this.partial)) {
        this.out(this.partial);
        this.partial = '';
        this.passing = true;
      } else if (this.partial.length > MAX_DOCTOR_LINE) {
        if (this.partial.startsWith(REPORT_PREFIX)) this.bad(this.partial, 'longer than 64 KiB');
        this.out(this.partial);
        this.partial = '';
        this.passing = true;
      }
    }
  }

  /** Per prefix, its next place in the chunk being split (-1: none; -2: not searched yet). */
  private found = [-2, -2];

  /** Where in chunk[from, to) a doctor line begins after other text, or -1. */
  private gluedAt(chunk: string, from: number, to: number): number {
    // At the chunk's start a line may be under way; further on, `from` begins a line.
    const after = from === 0 && (this.passing || this.partial) ? 0 : from + 1;
    let at = -1;
    [this.prefixes.probe, REPORT_PREFIX].forEach((p, k) => {
      let i = this.found[k] as number;
      // Each prefix is searched for once per place it occurs: the chunk is scanned once.
      if (i === -2 || (i >= 0 && i < after)) i = this.found[k] = chunk.indexOf(p, after);
      if (i >= 0 && i < to && (at < 0 || i < at)) at = i;
    });
    return at;
  }

  /** The stream ended: a last line without a newline is still a line. */
  end(): void {
    if (this.partial) {
      const line = this.partial;
      this.partial = '';
      if (line.startsWith(this.prefixes.probe) || line.startsWith(REPORT_PREFIX)) this.line(line, false);
      else this.out(line);
    }
    this.flush();
  }

  private mayBeOurs(partial: string): boolean {
    for (const p of [this.prefixes.probe, REPORT_PREFIX]) {
      if (partial.startsWith(p) || p.startsWith(partial)) return true;
    }
    return false;
  }

  private line(line: string, newline = true): void {
    if (line.startsWith(this.prefixes.probe)) {
      this.onProbe(line.slice(this.prefixes.probe.length), now());
      return;
    }
    // Threads of a crashing program can glue text before a report line: find it anywhere.
    const at = line.indexOf(REPORT_PREFIX);
    if (at < 0) {
      this.out(newline ? `${line}\n` : line);
      return;
    }
    const json = line.slice(at + REPORT_PREFIX.length);
    let value: unknown;
    let why: string | undefined;
    try {
      value = JSON.parse(json);
      why = reportShape(value);
    } catch (err) {
      why = `not JSON (${(err as Error).message})`;
    }
    if (why !== undefined) {
      this.bad(line, why);
      // Not a report of devexit's: the program's own text, shown as it wrote it.
      this.out(newline ? `${line}\n` : line);
      return;
    }
    if (at > 0) this.out(`${line.slice(0, at)}\n`);
    if (this.reports.length < MAX_REPORTS) this.reports.push({ entry: value as CloseReportEntry, at: now() });
    else this.reportsDropped++;
  }

  private bad(line: string, why: string): void {
    this.malformedCount++;
    if (this.malformed.length < MAX_MALFORMED) this.malformed.push({ line: cut(line), why: cut(why, 200) });
  }

  private out(text: string): void {
    this.pending.push(text);
  }

  private flush(): void {
    if (this.pending.length === 0) return;
    const text = this.pending.length === 1 ? (this.pending[0] as string) : this.pending.join('');
    this.pending = [];
    this.tail = text.length >= TAIL_BYTES ? text.slice(-TAIL_BYTES) : (this.tail + text).slice(-TAIL_BYTES);
    this.pass(text);
  }
}

/** Where the program's output goes: a stream (backpressure is kept), a function, or nowhere. */
export type Sink = Writable | ((chunk: string) => void) | undefined;

/** A sink as a function that keeps backpressure: `pause` is called while the sink is full. */
export function sinkWriter(to: Sink, pause: () => void, resume: () => void): (text: string) => void {
  if (!to) return () => {};
  if (typeof to === 'function') return to;
  let waiting = false;
  return (text) => {
    if (!to.write(text) && !waiting) {
      waiting = true;
      pause();
      to.once('drain', () => {
        waiting = false;
        resume();
      });
    }
  };
}
