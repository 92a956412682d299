import { join } from 'node:path';
import { loadAddon, type QueueAddon } from '@devexit/backend';

/** Opaque handle of a process-wide native cpu device. */
export type NativeHandle = { readonly __brand: 'devexit-cpu-device' };

/** The whole native surface of devexit_cpu.node. */
export interface CpuAddon extends QueueAddon<NativeHandle> {
  probe(): {
    defaultThreads: number;
    compiler: string;
    kernelAbi: number;
    registry: boolean;
    registryError?: string;
  };
  /** The device's queue service, started; or a status when refused (closed, exiting). */
  open(index: number, threads: number): NativeHandle | number;
  threads(h: NativeHandle): number;
  loadKernel(path: string, entry: string): number;
}

let addon: CpuAddon | undefined;

/** The addon (index.ts loaded @devexit/native first): DEVEXIT_CPU_ADDON, a local build, or the prebuild. */
export function cpuAddon(): CpuAddon {
  if (addon) return addon;
  addon = loadAddon<CpuAddon>({
    name: 'devexit_cpu',
    packageDir: join(__dirname, '..'),
    envVar: 'DEVEXIT_CPU_ADDON',
    exports: ['probe', 'open', 'threads', 'loadKernel', 'submit'],
  });
  return addon;
}
