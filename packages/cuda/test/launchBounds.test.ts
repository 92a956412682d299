// The launch bounds check lives in the shared native queue (devexit_queue.hpp): reached without
// the JS checks, a too-small buffer is refused with the same status on cpu, cuda and hip. cuda's
// own service thread used to check argument kinds only, and write past the buffer.
import { join } from 'node:path';
import { defineNativeLaunchBounds, type RawQueueAddon } from '@devexit/conformance';
import { standinCudaPath } from '@devexit/standins-cuda';

process.env.DEVEXIT_CUDA_LIBRARY = standinCudaPath;

defineNativeLaunchBounds({
  name: 'cuda',
  label: 'stand-in libcuda',
  addon: () => {
    require('@devexit/native');
    return require(join(__dirname, '..', 'build', 'Release', 'devexit_cuda.node')) as RawQueueAddon;
  },
  open: (addon) => (addon as unknown as { open(index: number, arch: string): unknown }).open(0, 'sm_90'),
});
