// The registry first, in every realm that loads a backend: closeServices() and the exit layers of
// this realm then see every native service, whichever realm started it.
import '@devexit/native';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BackendBase, backendError, Completions, NativeDevice, Status, statusError } from '@devexit/backend';
import type { Backend, ProbeResult } from '@devexit/core';
import { type CpuAddon, cpuAddon, type NativeHandle } from './addon.js';
import { configuredDeviceCount, configuredThreads } from './settings.js';

export { configuredDeviceCount } from './settings.js';

const VERSION: string = (require('../package.json') as { version: string }).version;

let completions: Completions | undefined;

function realm(addon: CpuAddon): Completions {
  if (!completions) {
    completions = new Completions(addon);
    completions.onClosed = (index, service) => {
      if (service === 'queue') cpu.devices.get(index)?.closedElsewhere();
    };
  }
  return completions;
}

// dlopen needs a file: bytes go to a private temp file, removed once the object is loaded.
function loadUserKernel(addon: CpuAddon, source: string | Uint8Array, entry: string): number {
  let path: string;
  let dir: string | undefined;
  if (typeof source === 'string') {
    if (source.length === 0) throw backendError('cpu', 'loadKernel: source is an empty path');
    path = source;
  } else {
    dir = mkdtempSync(join(tmpdir(), 'devexit-cpu-'));
    path = join(dir, 'kernel.so');
    writeFileSync(path, source, { mode: 0o700 });
  }
  try {
    return addon.loadKernel(path, entry);
  } catch (err) {
    throw backendError('cpu', `cannot load kernel ${entry} from ${path}: ${(err as Error).message}`);
  } finally {
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

function createDevice(index: number): NativeDevice<NativeHandle> {
  const addon = cpuAddon();
  const threads = configuredThreads() || addon.probe().defaultThreads;
  const device: NativeDevice<NativeHandle> = new NativeDevice<NativeHandle>({
    backend: 'cpu',
    index,
    name: `cpu (${threads} threads)`,
    addon,
    completions: realm(addon),
    open: () => {
      const h = addon.open(index, threads);
      if (!('status' in h)) return h;
      if (h.status === Status.startFailed) throw backendError('cpu', `cannot start cpu:${index}: ${h.error}`);
      throw statusError(h.status, { backend: 'cpu', device: device.id, what: 'start the queue' });
    },
    loadKernel: async (_d, source, entry) => loadUserKernel(addon, source, entry),
    onClosed: (d) => cpu.forget(index, d),
  });
  return device;
}

const cpu = new BackendBase<NativeDevice<NativeHandle>>({
  name: 'cpu',
  probe(): ProbeResult {
    const count = configuredDeviceCount();
    const versions: Record<string, string> = { '@devexit/cpu': VERSION, node: process.versions.node };
    if (typeof count === 'string') return { available: false, reason: count, versions };
    let info: ReturnType<CpuAddon['probe']>;
    try {
      info = cpuAddon().probe();
    } catch (err) {
      return { available: false, reason: (err as Error).message, versions };
    }
    versions.compiler = info.compiler;
    versions.kernelAbi = String(info.kernelAbi);
    if (!info.registry)
      return { available: false, reason: info.registryError ?? 'registry not found', versions };
    const threads = configuredThreads() || info.defaultThreads;
    return { available: true, devices: count, versions, details: `${threads} threads per device` };
  },
  create: createDevice,
});

/** The cpu backend: CPU devices, each a native queue thread with a pool of kernel threads. */
export const backend: Backend = cpu;
export type { CpuAddon } from './addon.js';
export { Status };
