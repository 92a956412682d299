import type { DeviceId } from './deviceId.js';

/**
 * The contract every backend package (cpu, cuda, hip, wgpu, and third parties) implements.
 * Types only: the conformance suite (tooling/conformance) checks behaviour.
 */

/** What probe() found. `reason` is for people: which library or driver was tried and why it failed. */
export type ProbeResult =
  | { available: true; devices: number; versions: Record<string, string>; details?: string }
  | { available: false; reason: string; versions?: Record<string, string> };

/**
 * Options of the async calls that can be cancelled. An aborted call rejects with an AbortError
 * (name 'AbortError', code 'ABORT_ERR', cause: the signal's reason); what it started may still
 * run, and its result is dropped.
 */
export interface AbortOptions {
  signal?: AbortSignal;
}

export interface Backend {
  /** The backend name; also the device type name (deviceType(name)). */
  readonly name: string;
  /** Never throws: says whether the backend can run here and, if not, why. */
  probe(): Promise<ProbeResult>;
  /** Rejects with ERR_DEVEXIT_UNAVAILABLE when probe() would say unavailable. */
  deviceCount(): Promise<number>;
  /**
   * Opens device `index` (ERR_DEVEXIT_OUT_OF_RANGE past deviceCount()). Opening twice returns
   * the same process-wide device service; its close is registered once per device and service.
   * Aborting stops waiting; a device opened meanwhile stays open (the next open() returns it).
   */
  open(index: number, options?: AbortOptions): Promise<Device>;
}

/** Built-in kernels every backend runs, with these arguments (n = element count):
 * - fill_u32(out: buffer, value: u32, n: u32): out[i] = value
 * - copy(src: buffer, dst: buffer, n: u32): dst[i] = src[i] (u32 elements)
 * - saxpy_f32(x: buffer, y: buffer, a: f32, n: u32): y[i] = a * x[i] + y[i]
 * - sum_f32(x: buffer, out: buffer, n: u32): out[0] = x[0] + ... + x[n-1] (float order may vary)
 * Launch them with grid = n. Their signatures, as data, are BUILTIN_KERNEL_SIGNATURES.
 */
export type BuiltinKernelName = 'fill_u32' | 'copy' | 'saxpy_f32' | 'sum_f32';
export const BUILTIN_KERNELS: readonly BuiltinKernelName[] = ['fill_u32', 'copy', 'saxpy_f32', 'sum_f32'];

/** What a kernel argument is: a buffer, or a scalar tagged with its type. */
export type ArgKind = 'buffer' | 'u32' | 'i32' | 'f32';

export interface KernelParam {
  readonly name: string;
  readonly kind: ArgKind;
  /**
   * For buffers: how many 4-byte elements it must hold, as the name of the u32 parameter that
   * counts them ('n'), or a fixed number.
   */
  readonly elements?: string | number;
}

/**
 * The built-in kernels' signatures: the one table every backend and the conformance suite use
 * to accept or refuse a launch (argument kinds, and buffers large enough for n elements).
 */
export const BUILTIN_KERNEL_SIGNATURES: Readonly<Record<BuiltinKernelName, readonly KernelParam[]>> =
  Object.freeze({
    fill_u32: [
      { name: 'out', kind: 'buffer', elements: 'n' },
      { name: 'value', kind: 'u32' },
      { name: 'n', kind: 'u32' },
    ],
    copy: [
      { name: 'src', kind: 'buffer', elements: 'n' },
      { name: 'dst', kind: 'buffer', elements: 'n' },
      { name: 'n', kind: 'u32' },
    ],
    saxpy_f32: [
      { name: 'x', kind: 'buffer', elements: 'n' },
      { name: 'y', kind: 'buffer', elements: 'n' },
      { name: 'a', kind: 'f32' },
      { name: 'n', kind: 'u32' },
    ],
    sum_f32: [
      { name: 'x', kind: 'buffer', elements: 'n' },
      { name: 'out', kind: 'buffer', elements: 1 },
      { name: 'n', kind: 'u32' },
    ],
  });

/** A device allocation. Opaque: only the backend that made it can use it. */
export interface DeviceBuffer {
  readonly device: DeviceId;
  readonly size: number;
}

export interface Kernel {
  readonly name: string;
}

/** Kernel arguments: a buffer, or a scalar tagged with its type. */
export type KernelArg = DeviceBuffer | { u32: number } | { i32: number } | { f32: number };

/** Global work size: invocations in x (and optionally y, z). */
export type Grid = number | readonly [number, number?, number?];

/**
 * A device's queue service: commands run in the order they were enqueued. Enqueueing methods
 * return at once (the data of write() is copied at call time); read() and flush() settle when
 * the queue reached them. After close, calls throw ERR_DEVEXIT_DEVICE_CLOSED; after exit began
 * (or shutdown()), ERR_DEVEXIT_EXITING. `await using` a queue closes its device at the end of
 * the scope.
 */
export interface Queue extends AsyncDisposable {
  alloc(bytes: number): DeviceBuffer;
  free(buffer: DeviceBuffer): void;
  write(buffer: DeviceBuffer, data: ArrayBufferView, offset?: number): void;
  /** Aborting drops the result: the read still runs in order, nothing else changes. */
  read(buffer: DeviceBuffer, offset?: number, bytes?: number, options?: AbortOptions): Promise<Uint8Array>;
  /** Fills with a repeated u32 value; offset and bytes are multiples of 4. */
  fill(buffer: DeviceBuffer, value: number, offset?: number, bytes?: number): void;
  copy(src: DeviceBuffer, dst: DeviceBuffer, bytes?: number, srcOffset?: number, dstOffset?: number): void;
  launch(kernel: Kernel, grid: Grid, args: readonly KernelArg[]): void;
  /** Settles once everything enqueued before it has run. Aborting stops waiting, nothing else. */
  flush(options?: AbortOptions): Promise<void>;
  /** The same as the device's close(). */
  [Symbol.asyncDispose](): Promise<void>;
}

export interface Device extends AsyncDisposable {
  readonly id: DeviceId;
  readonly backend: string;
  /** Human-readable: "AMD Instinct MI210", "llvmpipe (LLVM 19)", "cpu (16 threads)". */
  readonly name: string;
  readonly closed: boolean;
  /** The queue service, started on first use (not at open). Refused once exiting. */
  queue(): Queue;
  /** A built-in kernel by name. */
  kernel(name: BuiltinKernelName): Kernel;
  /**
   * A user kernel. `source` is backend-specific: a shared-object path (cpu), PTX or CUDA C++
   * (cuda), a code object or HIP C++ (hip), WGSL (wgpu). `entry` names the function.
   */
  loadKernel(source: string | Uint8Array, entry: string): Promise<Kernel>;
  /**
   * Closes the device's services now: stops accepting work, settles what was queued (see the
   * backend's README for finish-or-drop), releases vendor objects, and unregisters the close so
   * exit skips it. Idempotent.
   */
  close(): Promise<void>;
  /** The same as close(): `await using device = await backend.open(0)`. */
  [Symbol.asyncDispose](): Promise<void>;
}
