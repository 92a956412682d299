// The cross-backend suite and its exit-path matrix on an NVIDIA GPU (device 0).
import { defineConformance } from '@devexit/conformance';
import { gpuEnv, label, requireGpu } from './gpu.js';

const probe = requireGpu();
console.log(`cuda conformance on ${label}: ${probe.devices} device(s), ${probe.details}`);

defineConformance({
  name: 'cuda',
  label,
  load: async () => (await import('@devexit/cuda')).backend,
  childModule: '@devexit/cuda',
  childEnv: gpuEnv,
  runs: 20,
  otherCloses: { 'cuda-host:0/compiler': 1 },
});
