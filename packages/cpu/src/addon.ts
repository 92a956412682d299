import { join } from 'node:path';

/** Opaque per-realm handle of a process-wide native device. */
export type NativeHandle = { readonly __brand: 'devexit-cpu-handle' };

export interface CpuAddon {
  probe(): {
    defaultThreads: number;
    compiler: string;
    kernelAbi: number;
    registry: boolean;
    registryError?: string;
  };
  open(index: number, threads: number): NativeHandle;
  closed(h: NativeHandle): boolean;
  threads(h: NativeHandle): number;
  start(h: NativeHandle): number;
  alloc(h: NativeHandle, bytes: number): number;
  free(h: NativeHandle, id: number): number;
  write(h: NativeHandle, id: number, offset: number, data: Uint8Array): number;
  read(h: NativeHandle, id: number, offset: number, bytes: number): Promise<Uint8Array> | number;
  fill(h: NativeHandle, id: number, value: number, offset: number, bytes: number): number;
  copy(
    h: NativeHandle,
    src: number,
    dst: number,
    bytes: number,
    srcOffset: number,
    dstOffset: number,
  ): number;
  launch(h: NativeHandle, kernel: number, grid: number, kinds: Uint32Array, values: Float64Array): number;
  flush(h: NativeHandle): Promise<void> | number;
  drain(h: NativeHandle): Promise<void> | undefined;
  finishClose(h: NativeHandle): void;
  builtin(name: string): number;
  loadKernel(path: string, entry: string): number;
}

/** Native statuses (addon/device.h). */
export const Status = {
  ok: 0,
  closed: 1,
  exiting: 2,
  badBuffer: 3,
  outOfRange: 4,
  startFailed: 5,
  badArgs: 6,
} as const;

let loaded: CpuAddon | undefined;
let loadError: Error | undefined;

/**
 * Loads @devexit/native (the registry the addon registers its closes with) and then the addon:
 * DEVEXIT_CPU_ADDON, else build/Release, else build/Debug. Throws the collected reasons.
 */
export function loadAddon(): CpuAddon {
  if (loaded) return loaded;
  if (loadError) throw loadError;
  const tried: string[] = [];
  try {
    require('@devexit/native');
    const root = join(__dirname, '..');
    const candidates = [
      process.env.DEVEXIT_CPU_ADDON,
      join(root, 'build', 'Release', 'devexit_cpu.node'),
      join(root, 'build', 'Debug', 'devexit_cpu.node'),
    ].filter((p): p is string => !!p);
    for (const path of candidates) {
      try {
        loaded = require(path) as CpuAddon;
        return loaded;
      } catch (err) {
        const e = err as NodeJS.ErrnoException;
        if (e.code !== 'MODULE_NOT_FOUND') throw err;
        tried.push(`${path}: not found`);
      }
    }
    throw new Error(
      `the addon devexit_cpu.node is not built (${tried.join('; ')}); run \`pnpm run build:native\` in @devexit/cpu (needs python3, make and a C++17 compiler)`,
    );
  } catch (err) {
    loadError = err instanceof Error ? err : new Error(String(err));
    throw loadError;
  }
}
