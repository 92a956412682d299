import type { RunReport } from './run.js';
import { formatRun } from './runFormat.js';
import { timelineOf } from './timeline.js';
import { timelineSvg } from './timelineSvg.js';

const esc = (s: string) =>
  s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] ?? c);

/** The timeline picture of a run, as SVG. */
export function runTimelineSvg(report: RunReport): string {
  return timelineSvg(timelineOf(report));
}

/** A page: the picture, and beside it the report as `devexit doctor run` prints it (and its JSON). */
export function runTimelineHtml(report: RunReport): string {
  const svg = runTimelineSvg(report);
  const tail = report.stderrTail.split('\n').slice(-40).join('\n');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${esc(`devexit exit timeline: ${report.command.join(' ')}`)}</title>
<style>
  body { margin: 0; padding: 16px; font: 13px/1.4 "DejaVu Sans", Arial, sans-serif; color: #212121; background: #fff; }
  main { display: flex; flex-wrap: wrap; gap: 24px; align-items: flex-start; }
  figure { margin: 0; flex: none; }
  aside { flex: 1 1 420px; min-width: 320px; }
  pre { font: 12px/1.45 "DejaVu Sans Mono", monospace; white-space: pre-wrap; background: #f5f5f5; padding: 12px; margin: 0 0 12px; }
  h2 { font-size: 14px; margin: 0 0 8px; }
</style>
</head>
<body>
<main>
<figure id="timeline">
${svg}</figure>
<aside id="report">
<h2>devexit doctor run</h2>
<pre>${esc(formatRun(report))}</pre>
${tail.trim() ? `<h2>the end of its stderr</h2>\n<pre>${esc(tail)}</pre>\n` : ''}<details><summary>the report as JSON</summary><pre>${esc(JSON.stringify({ ...report, stderrTail: undefined }, null, 2))}</pre></details>
</aside>
</main>
</body>
</html>
`;
}
