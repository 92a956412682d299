// The launch bounds check lives in the shared native queue (devexit_queue.hpp): reached without
// the JS checks, a too-small buffer is refused with the same status on cpu, cuda and hip.
import { join } from 'node:path';
import { defineNativeLaunchBounds, type RawQueueAddon } from '@devexit/conformance';

defineNativeLaunchBounds({
  name: 'cpu',
  addon: () => {
    require('@devexit/native');
    return require(join(__dirname, '..', 'build', 'Release', 'devexit_cpu.node')) as RawQueueAddon;
  },
  open: (addon) => (addon as unknown as { open(index: number, threads: number): unknown }).open(0, 2),
});
