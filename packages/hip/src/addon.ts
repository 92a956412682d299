import { join } from 'node:path';
import type { AddonSpec, QueueAddon } from '@devexit/backend';

/** Opaque handle of a process-wide native hip device (its queue service). */
export type NativeHandle = { readonly __brand: 'devexit-hip-device' };

/** A native refusal: a devexit status, why, and the HIP error name when HIP said so. */
export interface Refusal {
  status: number;
  error?: string;
  errorName?: string;
  /** The HIP library did not load (error says what was tried). */
  unavailable?: true;
}

export interface NativeVersions {
  path: string;
  runtimeVersion: number;
  driverVersion: number;
  hiprtc: string;
  hiprtcVersion?: string;
  standin: string;
}

export interface NativeProbe {
  registry: boolean;
  registryError?: string;
  loaded: boolean;
  error?: string;
  versions?: NativeVersions;
  initStatus?: number;
  /** "hipErrorInvalidDevice (101)" */
  initName?: string;
  countStatus?: number;
  countName?: string;
  count?: number;
}

/** What the compiler service's own HIP initialisation returned, and its idle polls so far. */
export interface NativeCompilerState {
  initStatus: number;
  initName: string;
  countStatus: number;
  countName: string;
  count: number;
  polls: number;
}

/** The whole native surface of devexit_hip.node. */
export interface HipAddon extends QueueAddon<NativeHandle> {
  probe(): NativeProbe;
  deviceInfo(index: number): { name: string; arch: string } | Refusal;
  open(index: number): NativeHandle | Refusal;
  loadModule(h: NativeHandle, image: Uint8Array, entry: string, id: number): number;
  startCompiler(idlePollUs: number): NativeCompilerState | Refusal;
  compile(source: string, name: string, options: string[], device: number, id: number): number | Refusal;
  stopCompiler(): string | undefined;
  compilerState(): NativeCompilerState | null;
  refuseArch(arch: string): { refused?: string; unavailable?: string };
  builtinSource(): string;
}

/** devexit_hip.node: DEVEXIT_HIP_ADDON, a local build, or the prebuild. */
export const ADDON: AddonSpec = {
  name: 'devexit_hip',
  packageDir: join(__dirname, '..'),
  // Named, not read from packageDir/package.json: a bundle's folder holds the application's.
  platformPackages: '@devexit/hip',
  envVar: 'DEVEXIT_HIP_ADDON',
  exports: ['probe', 'open', 'deviceInfo', 'refuseArch', 'submit'],
};
