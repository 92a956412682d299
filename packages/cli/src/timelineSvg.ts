import type { Timeline } from './timeline.js';

/** The colours of the picture (the browser test samples them). */
export const COLORS = {
  ok: '#2e7d32',
  error: '#c62828',
  timeout: '#ef6c00',
  start: '#37474f',
  end: '#1565c0',
  crash: '#b71c1c',
  deadline: '#6a1b9a',
  budget: '#eceff1',
  layer: '#b0bec5',
  used: '#546e7a',
  text: '#212121',
  muted: '#616161',
} as const;

export const WIDTH = 960;
const LEFT = 210;
const RIGHT = 28;
const PLOT = WIDTH - LEFT - RIGHT;
const ROW = 28;
const BAR = 16;

const esc = (s: string) =>
  s.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c,
  );
const cut = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
const fmt = (ms: number) =>
  Math.abs(ms) >= 100 ? `${Math.round(ms)}` : Math.abs(ms) >= 1 ? ms.toFixed(1) : ms.toFixed(2);

/** Tick positions for [from, to]: steps of 1, 2 or 5 × 10^k, about six of them. */
export function ticks(from: number, to: number): number[] {
  const span = to - from;
  if (!(span > 0)) return [from];
  const raw = span / 6;
  const pow = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 5, 10].find((m) => m * pow >= raw) ?? 10) * pow;
  const out: number[] = [];
  for (let t = Math.ceil(from / step) * step; t <= to + step * 1e-9; t += step)
    out.push(Number((Math.round(t / step) * step).toPrecision(12)));
  return out;
}

/** The x range of the detail panel: the closes, the end, the triggers nearby, the deadline if near. */
export function detailRange(t: Timeline): { from: number; to: number; deadlineInside: boolean } {
  const bars = t.rows.flatMap((r) => r.bars);
  let to = Math.max(
    0,
    t.endMs ?? 0,
    t.closesEndMs ?? 0,
    t.layerSpan?.ms ?? 0,
    ...bars.map((b) => b.startMs + b.ms),
  );
  let from = Math.min(0, ...bars.map((b) => b.startMs));
  const near = Math.max(to - from, 1);
  for (const tr of t.triggers) if (tr.ms < from && tr.ms >= -near) from = tr.ms;
  const deadlineInside = t.deadlineMs !== undefined && t.deadlineMs <= 8 * Math.max(to, 1);
  if (deadlineInside && t.deadlineMs !== undefined) to = Math.max(to, t.deadlineMs);
  const span = Math.max(to - from, 1);
  return { from: from - span * 0.02, to: from + span * 1.08, deadlineInside };
}

/** The exit as an SVG picture: each close a bar per device and service, against the deadline. */
export function timelineSvg(t: Timeline): string {
  const out: string[] = [];
  const text = (x: number, y: number, s: string, attrs = '') =>
    out.push(`<text x="${x}" y="${y}"${attrs}>${esc(s)}</text>`);
  let y = 26;
  text(16, y, cut(`devexit exit timeline: ${t.command}`, 110), ' font-size="15" font-weight="bold"');
  y += 22;
  text(16, y, cut(`started by   ${t.startedBy}`, 130), ` fill="${COLORS.text}"`);
  y += 18;
  const endColor = t.crashed ? COLORS.crash : COLORS.end;
  const ended = t.endMs === undefined ? t.ending : `${t.ending}, ${fmt(t.endMs)} ms after the exit began`;
  text(16, y, cut(`ended        ${ended} (${t.verdict})`, 130), ` fill="${endColor}" font-weight="bold"`);

  // The whole deadline, and how much of it the closes used.
  y += 22;
  const budgetY = y;
  if (t.deadlineMs !== undefined) {
    const d = t.deadlineMs;
    const spent = Math.max(t.closesEndMs ?? 0, t.layerSpan?.ms ?? 0);
    const used = Math.min(spent, d);
    const usedW = d > 0 ? Math.max((used / d) * PLOT, used > 0 ? 2 : 0) : 0;
    text(16, y + 13, 'deadline', ` fill="${COLORS.muted}"`);
    out.push(
      `<rect class="budget" x="${LEFT}" y="${y}" width="${PLOT}" height="16" fill="${COLORS.budget}" data-deadline-ms="${d}"/>`,
      `<rect class="budget-used" x="${LEFT}" y="${y}" width="${usedW.toFixed(2)}" height="16" fill="${COLORS.used}"/>`,
    );
    const share = d > 0 ? (spent / d) * 100 : 0;
    text(
      LEFT + 6,
      y + 30,
      spent > 0
        ? `the closes took ${fmt(spent)} ms of the ${fmt(d)} ms deadline (${share < 0.1 ? '<0.1' : share.toFixed(1)}%)`
        : 'no closes ran',
      ` fill="${COLORS.muted}" font-size="12"`,
    );
    text(LEFT + PLOT, y + 30, `${fmt(d)} ms`, ` fill="${COLORS.deadline}" font-size="12" text-anchor="end"`);
  } else {
    text(16, y + 13, 'deadline', ` fill="${COLORS.muted}"`);
    text(LEFT, y + 13, 'unknown: @devexit/native was not loaded', ` fill="${COLORS.muted}"`);
  }
  y += 52;

  // The detail: ms after the exit began.
  const { from, to, deadlineInside } = detailRange(t);
  const x = (ms: number) => LEFT + ((ms - from) / (to - from)) * PLOT;
  const top = y + 18;
  // A bar's label: right of it where it fits, else left of it.
  const barLabel = (bx: number, bw: number, by: number, label: string) => {
    const right = bx + bw + 6;
    if (right + label.length * 6.5 < LEFT + PLOT)
      text(right, by + 12, label, ` font-size="12" fill="${COLORS.muted}"`);
    else text(bx - 6, by + 12, label, ` font-size="12" fill="${COLORS.muted}" text-anchor="end"`);
  };
  const rows = t.rows.length ? t.rows : [];
  const first = t.layerSpan ? 1 : 0;
  const bottom = top + (rows.length ? rows.length + first : first + 1) * ROW;
  out.push(
    `<rect class="plot" x="${LEFT}" y="${top}" width="${PLOT}" height="${bottom - top}" fill="#fafafa" stroke="#e0e0e0"/>`,
  );
  if (t.layerSpan) {
    const { layer, ms } = t.layerSpan;
    const lx0 = x(0);
    const lw = Math.max(x(ms) - lx0, 3);
    text(16, top + ROW / 2 + 5, `devexit: ${layer}`, ` fill="${COLORS.text}"`);
    out.push(
      `<rect class="layer" x="${lx0.toFixed(2)}" y="${top + (ROW - BAR) / 2}" width="${lw.toFixed(2)}" height="${BAR}" fill="${COLORS.layer}" data-layer="${esc(layer)}" data-ms="${ms}"/>`,
    );
    barLabel(lx0, lw, top + (ROW - BAR) / 2, `${fmt(ms)} ms in all`);
  }
  rows.forEach((row, i) => {
    const ry = top + (i + first) * ROW;
    text(16, ry + ROW / 2 + 5, cut(`${row.device} / ${row.service}`, 26), ` fill="${COLORS.text}"`);
    for (const b of row.bars) {
      const bx = x(b.startMs);
      const bw = Math.max(x(b.startMs + b.ms) - bx, 3);
      const by = ry + (ROW - BAR) / 2;
      out.push(
        `<rect class="bar" x="${bx.toFixed(2)}" y="${by}" width="${bw.toFixed(2)}" height="${BAR}" fill="${COLORS[b.outcome]}"` +
          ` data-device="${esc(row.device)}" data-service="${esc(row.service)}" data-outcome="${b.outcome}"` +
          ` data-layer="${esc(b.layer)}" data-start-ms="${b.startMs}" data-ms="${b.ms}" data-timing="${b.timing}">` +
          `<title>${esc(`${row.device}/${row.service}: ${b.outcome} in ${b.ms} ms (${b.layer}, ${b.timing})`)}</title></rect>`,
      );
      barLabel(bx, bw, by, `${fmt(b.ms)} ms · ${b.layer}${b.outcome === 'ok' ? '' : ` · ${b.outcome}`}`);
    }
  });
  if (!rows.length) {
    text(
      x(0) + 10,
      top + (first + 0.5) * ROW + 5,
      t.exitBegan
        ? 'no closes ran: devexit not loaded, nothing registered, or its layers are off'
        : 'no exit began: nothing to draw against',
      ` fill="${COLORS.muted}"`,
    );
  }
  // Markers: what led to the exit, the exit's start, the end, the deadline.
  const marker = (kind: string, at: number, color: string, label: string, dash = '', labelY = top - 6) => {
    const mx = x(at);
    out.push(
      `<line class="marker" data-kind="${kind}" data-ms="${at}" x1="${mx.toFixed(2)}" y1="${top - 2}" x2="${mx.toFixed(2)}" y2="${bottom + 2}" stroke="${color}" stroke-width="3"${dash}/>`,
    );
    const anchor = mx > LEFT + PLOT * 0.7 ? 'end' : 'start';
    text(
      mx + (anchor === 'end' ? -4 : 4),
      labelY,
      cut(label, 60),
      ` font-size="12" fill="${color}" text-anchor="${anchor}"`,
    );
  };
  for (const tr of t.triggers) {
    if (tr.ms >= from)
      marker('trigger', tr.ms, COLORS.muted, tr.what, ' stroke-dasharray="2 3"', bottom + 34);
  }
  if (t.exitBegan) marker('start', 0, COLORS.start, `exit began (${t.layer ?? '?'})`);
  if (t.endMs !== undefined) marker('end', t.endMs, endColor, t.ending, '', bottom + 18);
  if (deadlineInside && t.deadlineMs !== undefined) {
    marker(
      'deadline',
      t.deadlineMs,
      COLORS.deadline,
      `deadline ${fmt(t.deadlineMs)} ms`,
      ' stroke-dasharray="6 4"',
    );
  } else if (t.deadlineMs !== undefined) {
    text(
      LEFT + PLOT,
      top - 6,
      `deadline at ${fmt(t.deadlineMs)} ms →`,
      ` font-size="12" fill="${COLORS.deadline}" text-anchor="end"`,
    );
  }
  // The axis.
  y = bottom + 50;
  out.push(`<line x1="${LEFT}" y1="${y}" x2="${LEFT + PLOT}" y2="${y}" stroke="${COLORS.muted}"/>`);
  for (const tk of ticks(from, to)) {
    const tx = x(tk);
    out.push(
      `<line x1="${tx.toFixed(2)}" y1="${y}" x2="${tx.toFixed(2)}" y2="${y + 5}" stroke="${COLORS.muted}"/>`,
    );
    text(tx, y + 18, fmt(tk), ` font-size="11" fill="${COLORS.muted}" text-anchor="middle"`);
  }
  text(16, y + 18, 'ms after the exit began', ` font-size="11" fill="${COLORS.muted}"`);
  // The legend.
  y += 40;
  let lx = 16;
  const key = (color: string, label: string) => {
    out.push(`<rect x="${lx}" y="${y - 10}" width="12" height="12" fill="${color}"/>`);
    text(lx + 17, y, label, ' font-size="12"');
    lx += 30 + label.length * 6.6;
  };
  key(COLORS.ok, 'close ok');
  key(COLORS.error, 'close failed');
  key(COLORS.timeout, 'past the deadline');
  key(COLORS.start, 'exit began');
  key(endColor, t.crashed ? 'crashed' : 'ended');
  key(COLORS.deadline, 'deadline');
  const timings = new Set(t.rows.flatMap((r) => r.bars.map((b) => b.timing)));
  const notes: string[] = [];
  if (timings.has('reconstructed'))
    notes.push('native closes placed from their durations (devices in parallel, services in turn)');
  if (timings.has('approximate')) notes.push('closes seen only in the report placed when it was read');
  if (notes.length) {
    y += 18;
    text(16, y, notes.join('; '), ` font-size="11" fill="${COLORS.muted}"`);
  }
  const height = y + 16;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="DejaVu Sans, Arial, sans-serif" font-size="13" data-budget-y="${budgetY}">`,
    `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    ...out,
    '</svg>',
    '',
  ].join('\n');
}
