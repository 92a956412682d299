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

function section(heading: string, report: RunReport, id: string): string {
  const tail = report.stderrTail.split('\n').slice(-40).join('\n');
  return `<section>
<h2>${esc(heading)}</h2>
<main>
<figure id="${id}">
${runTimelineSvg(report)}</figure>
<aside id="${id}-report">
<pre>${esc(formatRun(report))}</pre>
${tail.trim() ? `<h3>the end of its stderr</h3>\n<pre>${esc(tail)}</pre>\n` : ''}<details><summary>the report as JSON</summary><pre>${esc(JSON.stringify({ ...report, stderrTail: undefined }, null, 2))}</pre></details>
</aside>
</main>
</section>`;
}

/** A page of one or more runs: each picture with its report beside it (and its JSON). */
export function timelinePage(title: string, runs: Array<{ heading: string; report: RunReport }>): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${esc(title)}</title>
<style>
  body { margin: 0; padding: 16px; font: 13px/1.4 "DejaVu Sans", Arial, sans-serif; color: #212121; background: #fff; }
  main { display: flex; flex-wrap: wrap; gap: 24px; align-items: flex-start; }
  figure { margin: 0; flex: none; }
  aside { flex: 1 1 420px; min-width: 320px; }
  pre { font: 12px/1.45 "DejaVu Sans Mono", monospace; white-space: pre-wrap; background: #f5f5f5; padding: 12px; margin: 0 0 12px; }
  h1 { font-size: 16px; margin: 0 0 12px; }
  h2 { font-size: 14px; margin: 16px 0 8px; }
  h3 { font-size: 13px; margin: 0 0 6px; }
</style>
</head>
<body>
<h1>${esc(title)}</h1>
${runs.map((r, i) => section(r.heading, r.report, i === 0 ? 'timeline' : `timeline-${i + 1}`)).join('\n')}
</body>
</html>
`;
}

/** `devexit doctor run --timeline out.html`: the picture with the report beside it. */
export function runTimelineHtml(report: RunReport): string {
  return timelinePage(`devexit doctor run: ${report.command.join(' ')}`, [
    { heading: 'devexit doctor run', report },
  ]);
}
