import { join } from 'node:path';
import type { CloseReportEntry, Layers, NativeBridge, Settings, SettingsUpdate } from '@devexit/core';
import type { BindingModule, NativeSettingsUpdate } from './binding.js';
import { handOver } from './handOver.js';
import { loadBinding } from './loadBinding.js';

export type { BindingModule, NativeSettingsUpdate } from './binding.js';

/** Which exit layers are available, enabled and armed in this process (doctor tools, tests). */
export interface GuardState {
  owner: boolean;
  /** 'glibc', or 'portable' (a DEVEXIT_PORTABLE build), 'macos', 'windows', 'other'. */
  platform: string;
  /** What this build of the registry's owner can do: the TLS guard, exit handlers that see the status. */
  available: { tls: boolean; exitStatus: boolean };
  layers: { js: boolean; tls: boolean; atexit: boolean };
  /** The main-thread thread_local guard: armed, and by what (init_array, module_init, ...). */
  tls: { armed: boolean; by: string };
  /** Exit handlers: "load", then "after <runtime>" per runtime's first use. */
  atexitHooks: string[];
  timeoutMs: number;
  onTimeout: 'exit' | 'warn';
  report: 'off' | 'text' | 'json';
  /** Where the deadline and the policy in force came from. */
  sources: { timeoutMs: string; onTimeout: string };
  abi: number;
  hostAbi: number;
}

const binding: BindingModule = loadBinding();

function parseLines(text: string): CloseReportEntry[] {
  return text
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as CloseReportEntry);
}

/** The guard's state, as the process-wide registry sees it. */
export function guardState(): GuardState {
  return JSON.parse(binding.state()) as GuardState;
}

function exitingView(): Uint32Array | undefined {
  try {
    const buffer = binding.exitingFlagBuffer();
    return buffer ? new Uint32Array(buffer) : undefined;
  } catch {
    return undefined;
  }
}

const REPORT = { off: 0, text: 1, json: 2 } as const;

function layerBits(layers: Layers): number {
  return (layers.js ? 1 : 0) | (layers.tls ? 2 : 0) | (layers.atexit ? 4 : 0);
}

function toNative(u: SettingsUpdate): NativeSettingsUpdate {
  const out: NativeSettingsUpdate = { origin: u.origin };
  if (u.timeoutMs !== undefined) out.timeoutMs = u.timeoutMs;
  if (u.onTimeout !== undefined) out.onTimeout = u.onTimeout === 'exit' ? 0 : 1;
  if (u.layers !== undefined) out.layers = layerBits(u.layers);
  if (u.report !== undefined) out.report = REPORT[u.report];
  if (u.timeoutSource !== undefined) out.timeoutSource = u.timeoutSource;
  if (u.onTimeoutSource !== undefined) out.onTimeoutSource = u.onTimeoutSource;
  return out;
}

function inForce(): Omit<Settings, 'signals' | 'workers'> {
  const s = guardState();
  return {
    timeoutMs: s.timeoutMs,
    onTimeout: s.onTimeout,
    layers: s.layers,
    report: s.report ?? 'off',
    sources: s.sources ?? {
      timeoutMs: 'another @devexit/native copy',
      onTimeout: 'another @devexit/native copy',
    },
  };
}

const bridge: NativeBridge = {
  deviceType: (name) => binding.deviceType(name),
  isExiting: () => binding.isExiting(),
  exitingView: exitingView(),
  closeAll: (layer, markExiting, exitCode) =>
    exitCode === undefined
      ? binding.closeAll(layer, markExiting)
      : binding.closeAll(layer, markExiting, exitCode),
  applySettings: (update) => {
    binding.applySettings(toNative(update));
  },
  settings: inForce,
  report: () => parseLines(binding.report()),
  forget: (type, index, service) => binding.forget(type, index, service),
  jsCloseBegin: (layer, exitCode, type, index, service) =>
    binding.jsCloseBegin(layer, exitCode, type, index, service),
  jsCloseEnd: () => binding.jsCloseEnd(),
  beginShutdown: () => binding.beginShutdown(),
  closeAsync: (layer, drainMs) => {
    let done!: (entries: CloseReportEntry[]) => void;
    const finished = new Promise<CloseReportEntry[]>((resolve) => {
      done = resolve;
    });
    return binding.closeAsync(layer, drainMs, (_failures, report) => done(parseLines(report)))
      ? finished
      : undefined;
  },
  hurryShutdown: () => binding.hurryShutdown(),
  guardState: () => guardState(),
  isMainThread: () => binding.isMainThread(),
  ...(binding.hostAbiVersion >= 4
    ? {
        watch: (spec, deadlineMs) => {
          binding.watch(spec, deadlineMs);
        },
        unwatch: () => binding.unwatch(),
        endWatch: () => binding.endWatch(),
        endProcess: (code: number, text: string, signal?: number): never => {
          binding.endProcess(code, text, signal ?? 0);
          // Unreachable where the owner can end it; a stop of last resort otherwise.
          process.kill(process.pid, 'SIGKILL');
          throw new Error('devexit: the process did not end');
        },
      }
    : {}),
};
// Into @devexit/core now when this realm needs it, else when core loads (see handOver.ts).
handOver(binding, bridge);

// A layer that could not be armed (an exit handler refused, the main-thread guard out of reach):
// one warning per process, whichever realm or copy takes it.
for (const line of binding.takeWarnings().split('\n')) {
  if (line) process.emitWarning(line, { type: 'DevexitWarning', code: 'DEVEXIT_LAYER_NOT_ARMED' });
}

/** The raw binding, for tools and tests. */
export const native: BindingModule = binding;
/** Directory holding devexit.h. */
export const include: string = join(__dirname, '..', 'include');
export const abiVersion: number = binding.abiVersion;
