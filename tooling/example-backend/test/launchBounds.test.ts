// The shared queue's launch check, reached without the JS checks (the raw addon, in a file of its
// own: one realm has one dispatcher).
import { join } from 'node:path';
import { defineNativeLaunchBounds, type RawQueueAddon } from '@devexit/conformance';

defineNativeLaunchBounds({
  name: 'example',
  addon: () => {
    require('@devexit/native');
    return require(join(__dirname, '..', 'build', 'Release', 'devexit_example.node')) as RawQueueAddon;
  },
  open: (addon) => (addon as unknown as { open(index: number): unknown }).open(0),
});
