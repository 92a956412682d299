import {
  argError,
  defineNativeBackend,
  type NativeBackendKit,
  NativeDevice,
  type NativeDeviceOptions,
  Status,
} from '@devexit/backend';
import type { ProbeResult } from '@devexit/core';
import {
  ADDON,
  type CudaAddon,
  type NativeDeviceInfo,
  type NativeHandle,
  type NativeProbe,
} from './addon.js';
import { isPtx, moduleImage, targetFor } from './kernels.js';

const VERSION: string = (require('../package.json') as { version: string }).version;

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
  probed ??= cuda.addon().probe();
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

function probe(): ProbeResult {
  const p = nativeProbe();
  const versions = versionsOf(p);
  const why = unavailableReason(p);
  if (why) return { available: false, reason: why, versions };
  const details = p.cuda.standin ? `${p.cuda.standin}; ${nvrtcNote(p)}` : nvrtcNote(p);
  return { available: true, devices: p.cuda.count ?? 0, versions, details };
}

let wired = false;

/** Starts the compiler service (a no-op while it runs), or throws the typed error. */
export function startCompilerService(keepalive: number, intervalUs: number): void {
  const wiring = cuda.compiler();
  wiring.checkNotExiting('start the NVRTC compiler');
  const addon = cuda.addon();
  cuda.realm();
  if (!wired) {
    wired = true;
    // A closed compiler rejects what waits for it, unless a running one has since replaced it.
    wiring.onClosed(() => {
      if (!addon.compilerState()) wiring.rejectPending('compile');
    });
  }
  const r = addon.startCompiler(keepalive, intervalUs);
  if (r.status !== Status.ok)
    throw cuda.refusalError(
      { status: r.status, error: r.error },
      { device: wiring.id, what: 'start the NVRTC compiler' },
    );
}

/** Compiles on the compiler service and settles with the PTX text. Arguments are checked. */
export function compileChecked(
  source: string,
  name: string,
  options: string[],
  builtinArch = '',
  signal?: AbortSignal,
): Promise<string> {
  startCompilerService(0, 0);
  const addon = cuda.addon();
  return cuda.compiler().run(
    'compile',
    (n) => addon.compile(source, name, options, builtinArch, n),
    (r) => Buffer.from(r.data ?? new Uint8Array(0)).toString('utf8'),
    signal,
  );
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
  const addon = cuda.addon();
  return device.completions.expect(
    device.pending,
    { backend: 'cuda', device: device.id, what: `load kernel ${entry}` },
    (id) => addon.loadModule(device.handle, image, entry, id),
    (r) => r.value,
  );
}

async function createDevice(
  index: number,
  kit: NativeBackendKit<CudaAddon, NativeHandle, CudaDevice>,
): Promise<CudaDevice> {
  const addon = kit.addon();
  const info = addon.deviceInfo(index);
  if ('status' in info) throw kit.refusalError(info, { device: undefined, what: `open cuda:${index}` });
  const arch = targetFor(info.major, info.minor, nativeProbe().nvrtc.archs ?? []);
  await compileBuiltins(addon, arch);
  const options = kit.deviceOptions(
    index,
    info.name,
    () => addon.open(index, arch),
    (d, source, entry) => loadUserKernel(d as CudaDevice, source, entry),
  );
  return new CudaDevice(options, info, arch);
}

/** The CUDA backend's table: a queue thread + stream per NVIDIA GPU, and the NVRTC compiler service. */
export const cuda = defineNativeBackend<CudaAddon, NativeHandle, CudaDevice>({
  name: 'cuda',
  addon: ADDON,
  vendorErrorProperty: 'cudaError',
  probe,
  device: createDevice,
});
