import { join } from 'node:path';
import type { AddonSpec, QueueAddon } from '@devexit/backend';

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
  /** The device's queue service, started; or the native failure shape when refused. */
  open(index: number, threads: number): NativeHandle | { status: number; error: string };
  threads(h: NativeHandle): number;
  loadKernel(path: string, entry: string): number;
}

/** devexit_cpu.node: DEVEXIT_CPU_ADDON, a local build, or the prebuild. */
export const ADDON: AddonSpec = {
  name: 'devexit_cpu',
  packageDir: join(__dirname, '..'),
  // Named, not read from packageDir/package.json: a bundle's folder holds the application's.
  platformPackages: '@devexit/cpu',
  envVar: 'DEVEXIT_CPU_ADDON',
  exports: ['probe', 'open', 'threads', 'loadKernel', 'submit'],
};
