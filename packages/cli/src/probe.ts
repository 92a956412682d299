// Preloaded into every Node process that `devexit doctor run` starts (NODE_OPTIONS=--require):
// tells the doctor, on stderr, when the process began to exit and which exit layers were armed
// then. Loads no devexit package itself (that would arm layers the program did not): it reads
// what the program loaded through @devexit/core's realm state and its diagnostics channel.
import { writeSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';
import { PROBE_PREFIX } from './probeProtocol.js';

interface CoreStateView {
  native?: { guardState?: () => unknown };
}

function devexitState(): { core: boolean; native: boolean; guard?: unknown } {
  // The realm state of each shape of core, newest first (state.ts: @3 since the hot-path flag).
  const g = globalThis as Record<symbol, CoreStateView | undefined>;
  const state = g[Symbol.for('@devexit/core/state@3')] ?? g[Symbol.for('@devexit/core/state@2')];
  if (!state) return { core: false, native: false };
  const out: { core: boolean; native: boolean; guard?: unknown } = { core: true, native: !!state.native };
  try {
    const guard = state.native?.guardState?.();
    if (guard !== undefined) out.guard = guard;
  } catch {
    // An older @devexit/native: no layers to tell.
  }
  return out;
}

function tell(event: Record<string, unknown>): void {
  try {
    writeSync(2, `${PROBE_PREFIX}${JSON.stringify({ ...event, pid: process.pid, t: Date.now() })}\n`);
  } catch {
    // stderr closed: the doctor learns nothing from this process.
  }
}

if (isMainThread) {
  let began = false;
  // devexit's own exit layer, or shutdown(), says so first (before its closes run).
  try {
    const dc = require('node:diagnostics_channel') as typeof import('node:diagnostics_channel');
    dc.subscribe('devexit:exit:start', (message) => {
      if (began) return;
      began = true;
      tell({ event: 'exit-start', ...(message as object), devexit: devexitState() });
    });
  } catch {
    // No diagnostics_channel: the 'exit' event below still tells.
  }
  process.on('exit', (code) => {
    if (!began) tell({ event: 'exit-start', layer: 'exit event', code, devexit: devexitState() });
    began = true;
    tell({ event: 'exit', code, devexit: devexitState() });
  });
}
