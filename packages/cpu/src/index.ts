// The registry first, in every realm that loads a backend: closeServices() and the exit layers of
// this realm then see every native service, whichever realm started it.
import '@devexit/native';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkPath, defineNativeBackend, NativeDevice, Status } from '@devexit/backend';
import type { Backend } from '@devexit/core';
import { ADDON, type CpuAddon, type NativeHandle } from './addon.js';
import { configuredDeviceCount, configuredThreads } from './settings.js';

export { configuredDeviceCount } from './settings.js';

const VERSION: string = (require('../package.json') as { version: string }).version;
const versions = (): Record<string, string> => ({ '@devexit/cpu': VERSION, node: process.versions.node });

const cpu = defineNativeBackend<CpuAddon, NativeHandle>({
  name: 'cpu',
  addon: ADDON,
  versions,
  probe(addon) {
    const count = configuredDeviceCount();
    const v = versions();
    const info = addon.probe();
    v.compiler = info.compiler;
    v.kernelAbi = String(info.kernelAbi);
    if (!info.registry)
      return { available: false, reason: info.registryError ?? 'registry not found', versions: v };
    const threads = configuredThreads() || info.defaultThreads;
    return { available: true, devices: count, versions: v, details: `${threads} threads per device` };
  },
  device(index, kit) {
    const addon = kit.addon();
    const threads = configuredThreads() || addon.probe().defaultThreads;
    return new NativeDevice<NativeHandle>(
      kit.deviceOptions(
        index,
        `cpu (${threads} threads)`,
        () => addon.open(index, threads),
        async (_d, source, entry) => loadUserKernel(addon, source, entry),
      ),
    );
  },
});

// dlopen needs a file: bytes go to a private temp file, removed once the object is loaded.
function loadUserKernel(addon: CpuAddon, source: string | Uint8Array, entry: string): number {
  let path: string;
  let dir: string | undefined;
  if (typeof source === 'string') {
    path = checkPath(source, 'source');
  } else {
    dir = mkdtempSync(join(tmpdir(), 'devexit-cpu-'));
    path = join(dir, 'kernel.so');
    writeFileSync(path, source, { mode: 0o700 });
  }
  try {
    return addon.loadKernel(path, entry);
  } catch (err) {
    // dlerror's text names the path too: cut there as well.
    const why = (err as Error).message.split(path).join(describePath(path));
    throw cpu.error(`cannot load kernel ${entry} from ${describePath(path)}: ${why}`);
  } finally {
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

function describePath(path: string): string {
  return path.length <= 80 ? path : `${path.slice(0, 79)}\u2026 (${path.length} characters)`;
}

/** The cpu backend: CPU devices, each a native queue thread with a pool of kernel threads. */
export const backend: Backend = cpu.backend;
export type { CpuAddon } from './addon.js';
export { Status };
