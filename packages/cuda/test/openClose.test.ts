import { defineOpenCloseMemory } from '@devexit/conformance';
import { standinCudaPath } from '@devexit/standins-cuda';

// On the stand-in libcuda (no NVIDIA GPU here): what is measured is the shared service layer. No
// kernel runs, so NVRTC is not needed.
defineOpenCloseMemory({
  name: 'cuda',
  label: 'stand-in libcuda',
  childModule: '@devexit/cuda',
  childEnv: { DEVEXIT_CUDA_LIBRARY: standinCudaPath },
});
