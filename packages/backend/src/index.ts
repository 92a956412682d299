export { BackendBase, type BackendOptions } from './backend.js';
export {
  type Completed,
  type CompletionAddon,
  Completions,
  type Dispatcher,
  Status,
  statusError,
} from './completions.js';
export { type AddonSpec, addonCandidates, loadAddon, platformTag } from './loader.js';
export { NativeDevice, type NativeDeviceOptions } from './nativeDevice.js';
export {
  ARG_KIND,
  NativeBuffer,
  NativeKernel,
  NativeQueue,
  type QueueAddon,
  type QueueOwner,
} from './nativeQueue.js';
export {
  argError,
  type BackendError,
  backendError,
  type CheckedArg,
  checkBuiltinName,
  checkCopy,
  checkData,
  checkEntry,
  checkFill,
  checkGrid,
  checkInteger,
  checkKernelSource,
  checkLaunchArgs,
  checkOptions,
  checkRange,
  checkRead,
  checkScalar,
  checkSize,
  checkU32,
  checkWrite,
  encodeLaunchArgs,
  foreignBufferError,
  foreignKernelError,
  freedBufferError,
  gridCount,
  type LaunchCheck,
  type Scalar,
  setVendorErrorProperty,
} from './validate.js';
