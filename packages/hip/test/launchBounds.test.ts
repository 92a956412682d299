// The launch bounds check lives in the shared native queue (devexit_queue.hpp): reached without
// the JS checks, a too-small buffer is refused with the same status on cpu, cuda and hip.
import { join } from 'node:path';
import { defineNativeLaunchBounds, type RawQueueAddon } from '@devexit/conformance';
import { standinHipPath } from '@devexit/standins-hip';

process.env.DEVEXIT_HIP_LIBRARY = standinHipPath;

defineNativeLaunchBounds({
  name: 'hip',
  label: 'stand-in libamdhip64',
  addon: () => {
    require('@devexit/native');
    return require(join(__dirname, '..', 'build', 'Release', 'devexit_hip.node')) as RawQueueAddon;
  },
  open: (addon) => (addon as unknown as { open(index: number): unknown }).open(0),
});
