import type { DemoCell, DemoResult } from './demo.js';

/** `clean 6/6 · 1 close` or `CRASH 4/6 · SIGSEGV 3, SIGABRT 1`. */
export function describeCell(c: DemoCell, withCloses: boolean): string {
  const wrong = Object.entries(c.endings).filter(([k]) => k !== `exit ${c.expectedCode}`);
  if (wrong.length === 0) {
    const closes = withCloses ? ` · ${c.closes} close${c.closes === 1 ? '' : 's'}` : '';
    return `clean ${c.runs}/${c.runs}${closes}`;
  }
  const verdict =
    c.crashes > 0
      ? `CRASH ${c.crashes}/${c.runs}`
      : c.hangs > 0
        ? `HANG ${c.hangs}/${c.runs}`
        : `UNEXPECTED ${c.unexpected}/${c.runs}`;
  return `${verdict} · ${wrong.map(([k, n]) => (wrong.length === 1 ? k : `${k} ${n}`)).join(', ')}`;
}

/** Breaks `text` into lines of at most `width` characters, the later ones indented. */
function wrap(text: string, width: number, indent: string): string[] {
  const out: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line && line.length + 1 + word.length > width) {
      out.push(line);
      line = indent + word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) out.push(line);
  return out;
}

export function formatDemo(result: DemoResult, options: { verbose?: boolean } = {}): string {
  const lines: string[] = [];
  const n = result.runs;
  if (result.rows.length) {
    lines.push(
      `Each program keeps a device service busy inside a vendor runtime and leaves by the exit path`,
      `shown: ${n} runs with devexit, ${n} without it (DEVEXIT_GUARD=0: the same program, unguarded).`,
      '',
    );
    const head = ['runtime', 'exit path', 'with devexit', 'without devexit'];
    const body = result.rows.map((r) => [
      r.runtime,
      `${r.label} (exit ${r.expectedCode})`,
      describeCell(r.withDevexit, true),
      describeCell(r.guardDisabled, false),
    ]);
    const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => (b[i] ?? '').length)));
    const line = (cols: string[]) =>
      cols
        .map((c, i) => c.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd();
    lines.push(line(head), line(widths.map((w) => '-'.repeat(w))));
    let last = '';
    for (const [i, b] of body.entries()) {
      const runtime = result.rows[i]?.runtime ?? '';
      // The runtime once per group: the rows below it are on the same one.
      lines.push(line([runtime === last ? '' : (b[0] ?? ''), ...b.slice(1)]));
      last = runtime;
    }
    lines.push('');
    for (const r of result.runtimes) lines.push(...wrap(`${r.runtime}: ${r.about}`, 100, '  '));
  } else {
    lines.push('No backend ran.');
  }
  const details: string[] = [];
  if (options.verbose) {
    for (const r of result.rows) {
      for (const [mode, c] of [
        ['with devexit', r.withDevexit],
        ['without devexit', r.guardDisabled],
      ] as const) {
        if (c.firstError) details.push(`${r.runtime}, ${r.label}, ${mode}: ${c.firstError}`);
      }
    }
  }
  const tail = [
    ...result.skipped.map((s) => `${s.backend}: skipped: ${s.reason}`),
    ...result.notes,
    ...details,
  ];
  if (tail.length) lines.push('', ...tail);
  if (result.timeline)
    lines.push('', `One exit of each kind, drawn (the closes against the deadline): ${result.timeline}`);
  if (result.rows.length && result.runtimes.some((r) => r.race)) {
    lines.push(
      '',
      "'with devexit': each run ended as its path asks; 'close' counts the services devexit closed",
      "before the runtime's own exit teardown. Other backends: devexit demo --backend cpu,wgpu.",
    );
  }
  return lines.join('\n');
}
