export { abortError, checkSignal, withAbort } from './abort.js';
export {
  type AbortOptions,
  type ArgKind,
  type Backend,
  BUILTIN_KERNEL_SIGNATURES,
  BUILTIN_KERNELS,
  type BuiltinKernelName,
  type Device,
  type DeviceBuffer,
  type Grid,
  type Kernel,
  type KernelArg,
  type KernelParam,
  type ProbeResult,
  type Queue,
} from './backend.js';
export { type CurrentConfig, configure, currentConfig, type DevexitConfig } from './config.js';
export { type CriticalOptions, critical } from './critical.js';
export {
  BUILTIN_DEVICE_TYPES,
  checkDeviceId,
  type DeviceId,
  describe as describeValue,
  deviceId,
  deviceType,
  deviceTypeName,
  formatDeviceId,
} from './deviceId.js';
export {
  CHANNELS,
  type DevexitLogger,
  type ExitEvent,
  reportRegistered,
} from './diagnostics.js';
export {
  AbortError,
  DevexitError,
  type DevexitErrorCode,
  deviceClosedError,
  deviceLostError,
  exitingError,
  outOfRangeError,
  ServiceCloseError,
  unavailableError,
} from './errors.js';
export {
  type CloseAtExitOptions,
  type CloseServicesOptions,
  closeAtExit,
  closeServices,
  forgetClose,
  getCloseReport,
  installNativeBridge,
} from './registry.js';

import { isExiting as isExitingImpl } from './exiting.js';

/**
 * True once the process began closing services for exit, or shutdown() began. A data property,
 * not a re-export getter: it is called on hot paths (every enqueue), and a getter costs more than
 * the read.
 */
export const isExiting: () => boolean = isExitingImpl;
export { type CloseReportEntry, formatReportLine, parseReportLines } from './report.js';
export {
  DEFAULT_TIMEOUT_MS,
  envChoice,
  envInteger,
  envSwitch,
  type Layers,
  type OnTimeout,
  parseSettings,
  type ReportMode,
  type Settings,
  SHUTDOWN_SIGNALS,
  type ShutdownSignal,
  settings,
  TIMEOUT_MS_RANGE,
  WORKERS_MODES,
} from './settings.js';
export { type ShutdownOptions, shutdown } from './shutdown.js';
export { type TerminateOptions, terminate } from './terminate.js';
export type { NativeBridge, SettingsUpdate, WatchSpec, WorkersMode } from './types.js';
export {
  type ArgumentErrorCode,
  checkInteger,
  checkPath,
  DevexitRangeError,
  DevexitTypeError,
  invalidType,
  invalidValue,
  outOfRange,
} from './validate.js';

import { armExit, installNativeBridge } from './registry.js';
import { isWorkerCheap } from './thread.js';
import { armThreads } from './threads.js';
import type { NativeBridge } from './types.js';
import { armWorkerSide } from './workerSide.js';

// Every realm hears of the Workers it creates (and arms its exit layer and DEVEXIT_SIGNALS when
// it makes its first: its Workers' closes depend on them); a Worker announces itself to the
// thread that may stop it. Costs nothing on a main thread that never makes a Worker.
armThreads(armExit);
if (isWorkerCheap()) armWorkerSide();

// @devexit/native loaded first, and left its bridge for core to install (its handOver.ts): now.
const pendingBridge = (globalThis as unknown as Record<symbol, NativeBridge | undefined>)[
  Symbol.for('@devexit/native/bridge@1')
];
if (pendingBridge) installNativeBridge(pendingBridge);
