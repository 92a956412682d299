import { Status } from '@devexit/backend';
import type { Backend } from '@devexit/core';
import { cuda } from './cuda.js';

export type { CudaAddon, NativeCompilerState, NativeProbe } from './addon.js';
export {
  type CompileOptions,
  type CompilerOptions,
  compile,
  compilerState,
  startCompiler,
  stopCompiler,
} from './compiler.js';
export { CudaDevice } from './cuda.js';
export { isPtx } from './kernels.js';
export { Status };

/** An ERR_DEVEXIT_BACKEND error from this backend: CUDA_ERROR_... or NVRTC_ERROR_... when they said. */
export interface CudaError extends Error {
  code: 'ERR_DEVEXIT_BACKEND';
  vendorError?: string;
  cudaError?: string;
}

/** The CUDA C of the built-in kernels (fill_u32, copy, saxpy_f32, sum_f32). */
export function builtinKernelSource(): string {
  return cuda.addon().builtinSource();
}

/** The CUDA backend: NVIDIA GPUs through the driver API, a queue thread + stream per device. */
export const backend: Backend = cuda.backend;
