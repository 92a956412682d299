import { writeSync } from 'node:fs';
import type { NativeBridge } from '@devexit/core';
import type { BindingModule } from './binding.js';

/**
 * How @devexit/native plugs into @devexit/core without loading it when nothing needs it (issue 20:
 * core is ~17 M instructions and ~100 page faults to load, a sixth of what a bare node adds up to
 * on the bench's VM).
 *
 * - Core is loaded, and the bridge installed into it at once, as before, when this realm needs it
 *   now: core is in the realm already; the environment holds a DEVEXIT_* setting (core parses
 *   them) or NODE_DEBUG names devexit; this is not the main thread, or it has made Workers.
 * - Otherwise the bridge waits in the realm (PENDING) and core installs it when it loads. Until
 *   then this module stands in for core's pieces that act without being called:
 *   - the settings core would push from such an environment (the defaults, "from the
 *     environment": the first realm to load decides, as before);
 *   - the JS exit layer: the same hooks (process.emit's 'exit' first, a prepended 'exit' listener,
 *     process.reallyExit); with no JS closes in the realm it only closes the native ones, as
 *     core's layer does then. Someone observing devexit's exit (diagnostics_channel) gets core's
 *     layer, loaded then; once core took the bridge, its own layer (installed outside this one)
 *     runs and this one does nothing;
 *   - Workers: the main thread says it answers its Workers' hellos (core's threads.ts) and loads
 *     core with its first Worker, handing that Worker to core's bookkeeping.
 */

type Core = typeof import('@devexit/core');
type How = 'process.exit' | 'process.reallyExit';
type Emit = (this: NodeJS.Process, event: string | symbol, ...args: unknown[]) => boolean;
type ReallyExit = (this: NodeJS.Process, code?: number) => never;

/** The parts of core's per-realm state (core's state.ts, shape 4) read here. */
interface CoreStateView {
  native: NativeBridge | undefined;
  /** Core's JS exit layer, once its hooks are installed. */
  exitLayer?: (code: unknown, how: How) => void;
  /** Core's handler of a Worker this realm created, once it listens for them. */
  workerCreated?: (worker: unknown) => void;
}

const CORE_STATE = Symbol.for('@devexit/core/state@4');
/** The bridge waiting for core in this realm (core's index.ts installs it when it loads). */
const PENDING = Symbol.for('@devexit/native/bridge@1');
/** Core's threads.ts: the main thread answers its Workers' hellos. */
const MAIN_LISTENS = '__DEVEXIT_MAIN_LISTENS';
/** What core's settings.ts parses from the environment. */
const SETTINGS = [
  'DEVEXIT_GUARD',
  'DEVEXIT_LAYERS',
  'DEVEXIT_TIMEOUT_MS',
  'DEVEXIT_ON_TIMEOUT',
  'DEVEXIT_REPORT',
  'DEVEXIT_SIGNALS',
  'DEVEXIT_WORKERS',
];
/** What an observer of devexit's exit subscribes to (core's diagnostics.ts). */
const EXIT_CHANNELS = ['devexit:exit:start', 'devexit:exit:end', 'devexit:service:close'];

const realm = globalThis as unknown as Record<symbol, unknown>;
const coreState = () => realm[CORE_STATE] as CoreStateView | undefined;
const loadedModules = () => (process as { moduleLoadList?: unknown }).moduleLoadList;

function loadCore(bridge: NativeBridge): void {
  // Installs the pending bridge as it loads; this one only where none was pending.
  (require('@devexit/core') as Core).installNativeBridge(bridge);
}

/** loadCore at exit: false, with one line on stderr, where core fails to load. */
function loadCoreAtExit(bridge: NativeBridge): boolean {
  try {
    loadCore(bridge);
    return true;
  } catch (err) {
    const why = err instanceof Error ? err.message.split('\n')[0] : String(err);
    try {
      writeSync(
        2,
        `devexit: @devexit/core could not load at exit (${why}); the native closes run without it, unobserved\n`,
      );
    } catch {
      // stderr closed: the closes still run.
    }
    return false;
  }
}

function coreNeededNow(binding: BindingModule): boolean {
  if (coreState()) return true;
  const env = process.env;
  if (SETTINGS.some((name) => env[name] !== undefined)) return true;
  const debug = env.NODE_DEBUG;
  if (debug && /devexit|\*/i.test(debug)) return true;
  const loaded = loadedModules();
  if (!Array.isArray(loaded) || loaded.includes('NativeModule worker_threads')) return true;
  return binding.isMainThread() !== true;
}

function exitObserved(): boolean {
  const loaded = loadedModules();
  if (!Array.isArray(loaded) || !loaded.includes('NativeModule diagnostics_channel')) return false;
  try {
    const dc = require('node:diagnostics_channel') as typeof import('node:diagnostics_channel');
    return EXIT_CHANNELS.some((name) => dc.hasSubscribers(name));
  } catch {
    return false;
  }
}

function exitCodeOf(code: unknown): number {
  if (typeof code === 'number' && Number.isInteger(code)) return code;
  const fallback = process.exitCode;
  return typeof fallback === 'number' ? fallback : 0;
}

function installExitLayer(binding: BindingModule, bridge: NativeBridge): void {
  let ran = false;
  const onExit = (code: unknown, how: How): void => {
    if (ran) return;
    ran = true;
    // Core took the bridge: its layer, outside this one, ran or runs the closes.
    if (coreState()?.native) return;
    // An observer gets core's layer, loaded now; if core cannot load now (its files replaced or
    // removed while the process ran), the native closes still run here, and stderr says why.
    if (exitObserved() && loadCoreAtExit(bridge)) {
      coreState()?.exitLayer?.(code, how);
      return;
    }
    const { layers } = JSON.parse(binding.state()) as { layers: { js: boolean } };
    if (!layers.js) return;
    binding.closeAll(how === 'process.exit' ? 'js-exit' : 'really-exit', true, exitCodeOf(code));
  };
  const proc = process as unknown as { emit: Emit; reallyExit: ReallyExit };
  const failed: string[] = [];
  try {
    const emit = proc.emit;
    proc.emit = function devexitEmit(this: NodeJS.Process, event, ...args) {
      if (event === 'exit') onExit(args[0], 'process.exit');
      return emit.call(this, event, ...args);
    };
  } catch {
    failed.push('process.emit');
  }
  try {
    process.prependListener('exit', (code) => onExit(code, 'process.exit'));
  } catch {
    failed.push("an 'exit' listener");
  }
  try {
    const reallyExit = proc.reallyExit;
    proc.reallyExit = function devexitReallyExit(this: NodeJS.Process, code?: number): never {
      onExit(code, 'process.reallyExit');
      return reallyExit.call(this, code);
    };
  } catch {
    failed.push('process.reallyExit');
  }
  if (failed.length > 0) {
    process.emitWarning(
      `devexit: could not hook ${failed.join(', ')}: JS closes may not run on every exit path`,
      { type: 'DevexitWarning', code: 'DEVEXIT_LAYER_NOT_ARMED' },
    );
  }
}

/** Hands the bridge to core: now where this realm needs core, else when core loads. */
export function handOver(binding: BindingModule, bridge: NativeBridge): void {
  if (coreNeededNow(binding)) {
    loadCore(bridge);
    return;
  }
  // Another copy of @devexit/native got here first: its bridge is the realm's, as in core.
  if (realm[PENDING]) return;
  Object.defineProperty(globalThis, PENDING, { value: bridge, configurable: true });
  binding.applySettings({
    origin: 'env',
    timeoutMs: 3000,
    onTimeout: 0,
    layers: 7,
    report: 0,
    timeoutSource: 'the default',
    onTimeoutSource: 'the default',
  });
  try {
    process.env[MAIN_LISTENS] = String(process.pid);
  } catch {
    // A process.env that refuses writes: its Workers go on without waiting (core's waitKnown).
  }
  process.once('worker', (worker) => {
    loadCore(bridge);
    coreState()?.workerCreated?.(worker);
  });
  installExitLayer(binding, bridge);
}
