// Preloaded into every Node process that `devexit doctor run` starts (NODE_OPTIONS=--require):
// tells the doctor, on stderr, what started the exit (a signal, process.exit(), an uncaught error,
// the event loop emptying), when the process began to exit, which exit layers were armed then,
// and when each close ended. Loads no devexit package itself (that would arm layers the program
// did not): it reads what the program loaded through @devexit/core's realm state and its
// diagnostics channels. It changes no behaviour: it adds no listener that keeps the process alive
// or takes a default action away (signals are seen through process.emit, not listened to).
import { writeSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';
import { PROBE_PREFIX } from './probeProtocol.js';

interface CoreStateView {
  native?: { guardState?: () => unknown };
  entries?: Map<string, { type?: number; index?: number; service?: string }>;
  namesByType?: Map<number, string>;
}

/** The realm state of each shape of core, newest first (state.ts: @4 since Workers, @3 since the hot-path flag). */
function coreStateView(): CoreStateView | undefined {
  const g = globalThis as Record<symbol, CoreStateView | undefined>;
  return (
    g[Symbol.for('@devexit/core/state@4')] ??
    g[Symbol.for('@devexit/core/state@3')] ??
    g[Symbol.for('@devexit/core/state@2')]
  );
}

/**
 * The JS closes registered when the exit began (`cpu:0/queue`): every other close the exit runs
 * is a native one. The doctor places native closes differently (they are published together).
 */
function jsCloses(): string[] | undefined {
  try {
    const state = coreStateView();
    if (!(state?.entries instanceof Map)) return undefined;
    const out: string[] = [];
    for (const e of state.entries.values()) {
      if (out.length >= 1000) break;
      out.push(`${state.namesByType?.get(e.type ?? -1) ?? `type${e.type}`}:${e.index}/${e.service}`);
    }
    return out;
  } catch {
    return undefined;
  }
}

function devexitState(): { core: boolean; native: boolean; guard?: unknown } {
  const state = coreStateView();
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

const now = () => performance.timeOrigin + performance.now();

function tell(event: Record<string, unknown>): void {
  try {
    writeSync(2, `${PROBE_PREFIX}${JSON.stringify({ ...event, pid: process.pid, t: now() })}\n`);
  } catch {
    // stderr closed: the doctor learns nothing from this process.
  }
}

/** What led to the exit, oldest first: [{ what, t }]. */
const triggers: Array<{ what: string; t: number }> = [];
function trigger(what: string): void {
  if (triggers.length < 8) triggers.push({ what, t: now() });
}

function watchTriggers(): void {
  const exit = process.exit;
  process.exit = function exit_(this: NodeJS.Process, code?: number | string | null) {
    const shown = code ?? process.exitCode ?? 0;
    trigger(`process.exit(${typeof shown === 'string' ? JSON.stringify(shown) : shown})`);
    return exit.call(this, code);
  } as typeof process.exit;
  // A monitor: Node's own handling (print, exit 1) goes on.
  process.on('uncaughtExceptionMonitor', (err, origin) => {
    const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
    trigger(
      `${origin === 'unhandledRejection' ? 'unhandled rejection' : 'uncaught exception'}: ${message.slice(0, 120)}`,
    );
  });
  // Signals and the natural end are seen as Node emits them, without a listener of ours: a
  // signal listener would take Node's default (ending the process) away, and devexit's own
  // signal handling counts listeners.
  const proc = process as unknown as {
    emit: (this: NodeJS.Process, event: string | symbol, ...args: unknown[]) => boolean;
  };
  const emit = proc.emit;
  proc.emit = function probeEmit(this: NodeJS.Process, event, ...args) {
    if (event === 'beforeExit') {
      // Fires when the loop emptied: anything noted before it did not end the process.
      triggers.length = 0;
      trigger('natural end (the event loop emptied)');
    } else if (typeof event === 'string' && /^SIG[A-Z0-9]+$/.test(event)) trigger(`signal ${event}`);
    return emit.call(this, event, ...args);
  };
}

if (isMainThread) {
  let began = false;
  const exitStart = (message: object) => {
    if (began) return;
    began = true;
    tell({
      event: 'exit-start',
      ...message,
      trigger: triggers,
      jsCloses: jsCloses(),
      devexit: devexitState(),
    });
  };
  watchTriggers();
  try {
    const dc = require('node:diagnostics_channel') as typeof import('node:diagnostics_channel');
    // devexit's own exit layer, or shutdown(), says so first (before its closes run).
    dc.subscribe('devexit:exit:start', (message) => exitStart(message as object));
    // Which registry holds each service: native closes are published together after they ran.
    dc.subscribe('devexit:service:register', (message) => {
      const m = message as {
        device?: { type?: string; index?: number };
        service?: string;
        registry?: string;
      };
      tell({ event: 'register', device: m.device, service: m.service, registry: m.registry });
    });
    dc.subscribe('devexit:service:close', (message) => {
      const m = message as Record<string, unknown>;
      tell({
        event: 'close',
        device: m.device,
        service: m.service,
        layer: m.layer,
        ms: m.ms,
        outcome: m.outcome,
        error: typeof m.error === 'string' ? m.error.slice(0, 200) : undefined,
      });
    });
    dc.subscribe('devexit:exit:end', (message) => {
      const m = message as { layer?: string; ms?: number };
      tell({ event: 'exit-end', layer: m.layer, ms: m.ms });
    });
  } catch {
    // No diagnostics_channel: the 'exit' event below still tells.
  }
  process.on('exit', (code) => {
    exitStart({ layer: 'exit event', code });
    tell({ event: 'exit', code, devexit: devexitState() });
  });
}
