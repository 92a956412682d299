import type { ProcessReport, RunReport } from './run.js';

/** How the exit began, in words: `process.exit(0) → js-exit, code 0`. */
export function describeExitStart(p: ProcessReport): string {
  const b = p.exitBegan;
  if (!b) return 'no exit began';
  const how = [
    b.layer,
    b.signal ? `signal ${b.signal}` : undefined,
    b.code !== undefined ? `code ${b.code}` : undefined,
  ]
    .filter(Boolean)
    .join(', ');
  const chain = (b.trigger ?? []).map((t) => t.what);
  return chain.length ? `${chain.join(' → ')} → ${how}` : how;
}

/** The process whose exit the report is about: the one with closes, else the first to exit. */
export function mainProcess(r: RunReport): ProcessReport | undefined {
  const withCloses = r.processes.find((p) => r.closes.some((c) => c.pid === p.pid));
  return withCloses ?? r.processes.find((p) => p.exitBegan) ?? r.processes[0];
}

export function formatRun(r: RunReport): string {
  const lines = [`devexit doctor run: ${r.command.join(' ')}`];
  if (r.verdict === 'not-started') {
    lines.push(`  verdict      ${r.summary}`);
    return lines.join('\n');
  }
  lines.push(
    `  ended        ${r.signal ? `by signal ${r.signal}` : r.code === null ? 'not at all' : `with code ${r.code}`} after ${r.ms} ms`,
  );
  lines.push(`  verdict      ${r.summary}`);
  const main = mainProcess(r);
  if (main?.exitBegan) {
    lines.push(
      `  exit         began at ${main.exitBegan.ms} ms (${describeExitStart(main)}); the process ended ${r.exitMs ?? '?'} ms later`,
    );
  } else {
    lines.push('  exit         no exit began in any Node process it started (or none was a Node process)');
  }
  if (r.closes.length === 0 && r.unreportedCloses?.length) {
    // The program set DEVEXIT_REPORT itself (text, or off): its report lines are not the doctor's.
    lines.push(
      `  closes       none reported as DEVEXIT_REPORT=json lines (the doctor sets it; did the program set DEVEXIT_REPORT itself?); devexit's diagnostics channel saw ${r.unreportedCloses.length} (only closes run while JavaScript ran):`,
    );
    for (const c of r.unreportedCloses.slice(0, 50)) {
      lines.push(
        `    ${`${c.device.type}:${c.device.index}/${c.service}`.padEnd(24)} ${c.outcome ?? 'closed'} in ${Number(c.ms).toFixed(2)} ms (${c.layer})${c.error ? `: ${c.error}` : ''}`,
      );
    }
    if (r.unreportedCloses.length > 50) lines.push(`    ... ${r.unreportedCloses.length - 50} more`);
  } else if (r.closes.length === 0) {
    lines.push(
      '  closes       none reported (devexit not loaded, nothing registered, or the layers are off)',
    );
  } else {
    lines.push(
      `  closes       ${r.closes.length}${r.reportsDropped ? ` (${r.reportsDropped} more not kept)` : ''}`,
    );
    for (const c of r.closes) {
      const extra =
        c.drained === undefined
          ? ''
          : c.drained
            ? ', drained'
            : `, not drained${c.dropped ? ` (${c.dropped} dropped)` : ''}`;
      lines.push(
        `    ${`${c.device.type}:${c.device.index}/${c.service}`.padEnd(24)} ${c.outcome} in ${c.ms.toFixed(2)} ms (${c.layer}${extra})${c.error ? `: ${c.error}` : ''}`,
      );
    }
  }
  for (const m of r.malformed) lines.push(`  malformed    ${JSON.stringify(m.line)}: ${m.why}`);
  if (r.malformedCount > r.malformed.length)
    lines.push(`  malformed    ... ${r.malformedCount - r.malformed.length} more`);
  if (r.processes.length === 0) lines.push('  layers       unknown: no Node process reported');
  for (const p of r.processes) {
    const g = p.guard;
    const what = !p.devexit.core
      ? 'devexit not loaded'
      : !p.devexit.native || !g
        ? '@devexit/core only: the JS layer (no native layers)'
        : `js ${g.layers.js ? 'on' : 'OFF'}, main-thread guard ${g.layers.tls ? (g.tls.armed ? `armed (${g.tls.by})` : 'NOT armed') : 'OFF'}, atexit ${g.layers.atexit ? `on (${g.atexitHooks.join(', ')})` : 'OFF'}; deadline ${g.timeoutMs} ms`;
    lines.push(`  layers       pid ${p.pid}: ${what}`);
  }
  if (r.outputHeld)
    lines.push(
      '  output       still held open by a process it started (a daemon?) when it exited: not read further',
    );
  return lines.join('\n');
}
