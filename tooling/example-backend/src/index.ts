// The registry first, in every realm that loads a backend: closeServices() and the exit layers of
// this realm then see every native service, whichever realm started it.
import '@devexit/native';
import { join } from 'node:path';
import { type AddonSpec, defineNativeBackend, NativeDevice, type QueueAddon } from '@devexit/backend';
import type { Backend } from '@devexit/core';

/** Opaque handle of a process-wide example device (its queue service). */
export type NativeHandle = { readonly __brand: 'devexit-example-device' };

/** The whole native surface of devexit_example.node. */
export interface ExampleAddon extends QueueAddon<NativeHandle> {
  probe(): { registry: boolean; registryError?: string };
  open(index: number): NativeHandle | { status: number; error: string };
}

const ADDON: AddonSpec = {
  name: 'devexit_example',
  packageDir: join(__dirname, '..'),
  envVar: 'DEVEXIT_EXAMPLE_ADDON',
  exports: ['probe', 'open', 'submit'],
};

/** Devices on host memory: two, always. */
export const DEVICES = 2;

const VERSION: string = (require('../package.json') as { version: string }).version;
const versions = (): Record<string, string> => ({
  '@devexit/example-backend': VERSION,
  node: process.versions.node,
});

const example = defineNativeBackend<ExampleAddon, NativeHandle>({
  name: 'example',
  addon: ADDON,
  versions,
  probe(addon) {
    const info = addon.probe();
    if (!info.registry) return { available: false, reason: info.registryError ?? 'registry not found' };
    return {
      available: true,
      devices: DEVICES,
      versions: versions(),
      details: 'host memory (the example backend)',
    };
  },
  device(index, kit) {
    const addon = kit.addon();
    return new NativeDevice<NativeHandle>(
      kit.deviceOptions(index, `example:${index}`, () => addon.open(index)),
    );
  },
});

/** The example backend: the guide's backend, built-in kernels on host memory. */
export const backend: Backend = example.backend;
