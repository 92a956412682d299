import {
  argError,
  BackendBase,
  backendError,
  NativeDevice,
  type NativeDeviceOptions,
  Status,
  setVendorErrorProperty,
  statusError,
} from '@devexit/backend';
import type { Backend, ProbeResult } from '@devexit/core';
import {
  type CudaAddon,
  cudaAddon,
  isFailure,
  type NativeDeviceInfo,
  type NativeHandle,
  type NativeProbe,
} from './addon.js';
import { compileChecked } from './compiler.js';
import { isPtx, moduleImage, targetFor } from './kernels.js';
import { onServiceClosed, realm } from './realm.js';

export type { CudaAddon, NativeCompilerState, NativeProbe } from './addon.js';
export {
  type CompileOptions,
  type CompilerOptions,
  compile,
  compilerState,
  startCompiler,
  stopCompiler,
} from './compiler.js';
export { isPtx } from './kernels.js';
export { Status };

const VERSION: string = (require('../package.json') as { version: string }).version;

// Errors carry libcuda's or NVRTC's name as `cudaError` too (as @devexit/hip's carry `hipError`).
setVendorErrorProperty('cuda', 'cudaError');

/** An ERR_DEVEXIT_BACKEND error from this backend: CUDA_ERROR_... or NVRTC_ERROR_... when they said. */
export interface CudaError extends Error {
  code: 'ERR_DEVEXIT_BACKEND';
  vendorError?: string;
  cudaError?: string;
}

/** A CUDA device in one realm: the process-wide queue service, and what the device is. */
export class CudaDevice extends NativeDevice<NativeHandle> {
  /** [major, minor] */
  readonly computeCapability: readonly [number, number];
  /** The NVRTC target of its built-in kernels and of CUDA C given to loadKernel() (sm_90, compute_90). */
  readonly arch: string;
  readonly totalMemory: number;
  constructor(options: NativeDeviceOptions<NativeHandle>, info: NativeDeviceInfo, arch: string) {
    super(options);
    this.computeCapability = [info.major, info.minor];
    this.arch = arch;
    this.totalMemory = info.totalMem;
  }
}

let probed: NativeProbe | undefined;

/** One probe per realm: cuInit itself runs once per process (each call costs 50-80 ms). */
function nativeProbe(): NativeProbe {
  probed ??= cudaAddon().probe();
  return probed;
}

function versionsOf(p: NativeProbe): Record<string, string> {
  const v: Record<string, string> = { '@devexit/cuda': VERSION, node: process.versions.node };
  const d = p.cuda.driverVersion;
  if (p.cuda.path) v.library = p.cuda.path;
  if (d) v.driver = `${Math.floor(d / 1000)}.${Math.floor((d % 1000) / 10)}`;
  if (p.cuda.standin) v.standin = p.cuda.standin;
  v.nvrtc = p.nvrtc.loaded ? `${p.nvrtc.path} (${p.nvrtc.version})` : 'missing';
  return v;
}

function nvrtcNote(p: NativeProbe): string {
  return p.nvrtc.loaded ? `NVRTC ${p.nvrtc.version} (${p.nvrtc.path})` : `no NVRTC: ${p.nvrtc.error}`;
}

function unavailableReason(p: NativeProbe): string | undefined {
  if (!p.registry) return p.registryError ?? 'the devexit registry is not loaded';
  const c = p.cuda;
  if (!c.loaded) return `library missing: ${c.error}; ${nvrtcNote(p)}`;
  if (c.init !== 0) return `no CUDA device: cuInit returned ${c.initName} (${c.init})`;
  if (!c.count)
    return `no CUDA device: cuDeviceGetCount returned ${c.countName} (${c.countStatus}) with 0 devices`;
  return undefined;
}

// Once per target and process: the compiler service fills the native cache the queues read.
async function compileBuiltins(addon: CudaAddon, arch: string): Promise<void> {
  if (addon.builtinsCompiled(arch) || !nativeProbe().nvrtc.loaded) return;
  await compileChecked(
    addon.builtinSource(),
    'devexit_builtins.cu',
    [`--gpu-architecture=${arch}`],
    arch,
  ).catch((err: { code?: string }) => {
    // A failed compile is kept for the queue, which reports it at the first built-in launch.
    if (err.code === 'ERR_DEVEXIT_EXITING') throw err;
  });
}

async function loadUserKernel(
  device: CudaDevice,
  source: string | Uint8Array,
  entry: string,
): Promise<number> {
  if (source.length === 0)
    throw argError(
      'source',
      'CUDA C, PTX, or a module image (not empty)',
      source,
      typeof source !== 'string',
    );
  device.queue(); // starts the service (or throws the typed error) before any compile
  const image =
    typeof source === 'string' && !isPtx(source)
      ? moduleImage(await compileChecked(source, `${entry}.cu`, [`--gpu-architecture=${device.arch}`]))
      : moduleImage(source);
  device.check(`load kernel ${entry}`);
  return device.completions.expect(
    device.pending,
    { backend: 'cuda', device: device.id, what: `load kernel ${entry}` },
    (id) => cudaAddon().loadModule(device.handle, image, entry, id),
    (r) => r.value,
  );
}

async function createDevice(index: number): Promise<CudaDevice> {
  const addon = cudaAddon();
  const info = addon.deviceInfo(index);
  if (isFailure(info)) {
    throw info.status === Status.vendorError
      ? backendError('cuda', `cannot open cuda:${index}: ${info.error}`, info.errorName)
      : statusError(
          info.status,
          { backend: 'cuda', device: undefined, what: `open cuda:${index}` },
          info.error,
        );
  }
  const arch = targetFor(info.major, info.minor, nativeProbe().nvrtc.archs ?? []);
  await compileBuiltins(addon, arch);
  const options: NativeDeviceOptions<NativeHandle> = {
    backend: 'cuda',
    index,
    name: info.name,
    addon,
    completions: realm(),
    open: () => {
      const h = addon.open(index, arch);
      if (!isFailure(h)) return h;
      if (h.status === Status.startFailed)
        throw backendError('cuda', `cannot start the queue of cuda:${index}: ${h.error}`, h.errorName);
      throw statusError(h.status, { backend: 'cuda', device: device.id, what: 'start the queue' }, h.error);
    },
    loadKernel: (d, source, entry) => loadUserKernel(d as CudaDevice, source, entry),
    onClosed: (d) => cuda.forget(index, d as CudaDevice),
  };
  const device: CudaDevice = new CudaDevice(options, info, arch);
  return device;
}

const cuda = new BackendBase<CudaDevice>({
  name: 'cuda',
  probe(): ProbeResult {
    let p: NativeProbe;
    try {
      p = nativeProbe();
    } catch (err) {
      return { available: false, reason: (err as Error).message };
    }
    const versions = versionsOf(p);
    const why = unavailableReason(p);
    if (why) return { available: false, reason: why, versions };
    const details = p.cuda.standin ? `${p.cuda.standin}; ${nvrtcNote(p)}` : nvrtcNote(p);
    return { available: true, devices: p.cuda.count ?? 0, versions, details };
  },
  create: createDevice,
});

onServiceClosed('queue', (index) => cuda.devices.get(index)?.closedElsewhere());

/** The CUDA C of the built-in kernels (fill_u32, copy, saxpy_f32, sum_f32). */
export function builtinKernelSource(): string {
  return cudaAddon().builtinSource();
}

/** The CUDA backend: NVIDIA GPUs through the driver API, a queue thread + stream per device. */
export const backend: Backend = cuda;
