import type { BackendError } from '@devexit/backend';
import type { Backend } from '@devexit/core';
import { hip } from './hip.js';

export type { HipAddon, NativeCompilerState, NativeHandle } from './addon.js';
export {
  builtinKernelSource,
  type CompileOptions,
  type CompilerOptions,
  compile,
  compilerState,
  refuseArch,
  startCompiler,
  stopCompiler,
} from './compiler.js';

/**
 * An ERR_DEVEXIT_BACKEND error from HIP or hiprtc. `vendorError` is the runtime's name for it
 * (`hipErrorIllegalAddress`, `HIPRTC_ERROR_COMPILATION`), as on every backend's errors;
 * `hipError` is the same name, kept for code written against earlier releases.
 */
export interface HipError extends BackendError {
  hipError?: string;
}

/** The HIP backend: a queue service per AMD GPU, and the hiprtc compiler service. */
export const backend: Backend = hip.backend;
