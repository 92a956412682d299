import { join } from 'node:path';
import { type CloseReportEntry, installNativeBridge, type NativeBridge } from '@devexit/core';
import type { BindingModule } from './binding.js';
import { loadBinding } from './loader.js';

export type { BindingModule } from './binding.js';

/** Which exit layers are enabled and armed in this process (for doctor tools and tests). */
export interface GuardState {
  owner: boolean;
  layers: { js: boolean; tls: boolean; atexit: boolean };
  /** The main-thread thread_local guard: armed, and by what (init_array, module_init, ...). */
  tls: { armed: boolean; by: string };
  /** on_exit hooks: "load", then "after <runtime>" per runtime's first use. */
  atexitHooks: string[];
  timeoutMs: number;
  onTimeout: 'exit' | 'warn';
  abi: number;
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

const bridge: NativeBridge = {
  deviceType: (name) => binding.deviceType(name),
  isExiting: () => binding.isExiting(),
  exitingView: exitingView(),
  closeAll: (layer, markExiting, exitCode) =>
    exitCode === undefined
      ? binding.closeAll(layer, markExiting)
      : binding.closeAll(layer, markExiting, exitCode),
  configure: (timeoutMs, onTimeout) =>
    binding.configure(timeoutMs, onTimeout === undefined ? undefined : onTimeout === 'exit' ? 0 : 1),
  report: () => parseLines(binding.report()),
  forget: (type, index, service) => binding.forget(type, index, service),
  jsLayerEnabled: guardState().layers.js,
};
installNativeBridge(bridge);

/** The raw binding, for tools and tests. */
export const native: BindingModule = binding;
/** Directory holding devexit.h. */
export const include: string = join(__dirname, '..', 'include');
export const abiVersion: number = binding.abiVersion;
