import { BackendBase, NativeDevice, type NativeQueue } from '@devexit/backend';
import type { Backend, ProbeResult } from '@devexit/core';
import { hipAddon, isRefusal, type NativeHandle, type NativeProbe } from './addon.js';
import { compileOn } from './compiler.js';
import { refusalError } from './errors.js';
import { addon, realm, setQueueClosedHandler } from './realm.js';

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
export type { HipError } from './errors.js';

// ---- probe ----

let probed: NativeProbe | undefined;

// Loads the library and initialises HIP on this thread, once per realm.
function nativeProbe(): NativeProbe {
  probed ??= hipAddon().probe();
  return probed;
}

function formatVersion(v: number): string {
  return `${Math.floor(v / 10000000)}.${Math.floor(v / 100000) % 100}.${v % 100000}`;
}

function versionsOf(p: NativeProbe): Record<string, string> {
  const v = p.versions;
  if (!v) return {};
  const out: Record<string, string> = {
    library: v.path,
    runtime: formatVersion(v.runtimeVersion),
    driver: formatVersion(v.driverVersion),
  };
  if (v.hiprtc) out.hiprtc = v.hiprtcVersion ? `${v.hiprtc} (${v.hiprtcVersion})` : v.hiprtc;
  if (v.standin) out.standin = v.standin;
  return out;
}

function probe(): ProbeResult {
  let p: NativeProbe;
  try {
    p = nativeProbe();
  } catch (err) {
    return { available: false, reason: `addon missing: ${(err as Error).message}` };
  }
  const versions = versionsOf(p);
  if (!p.registry) return { available: false, reason: p.registryError ?? 'registry not found', versions };
  if (!p.loaded) return { available: false, reason: `library missing: ${p.error}`, versions };
  if (p.countStatus !== 0 || !p.count) {
    const reason = `no HIP device: hipGetDeviceCount returned ${p.countName} (hipInit returned ${p.initName})`;
    return { available: false, reason, versions };
  }
  const out: ProbeResult = { available: true, devices: p.count, versions };
  if (p.versions?.standin) out.details = p.versions.standin;
  return out;
}

// ---- devices ----

type HipDevice = NativeDevice<NativeHandle>;

async function loadKernel(device: HipDevice, arch: string, source: string | Uint8Array, entry: string) {
  const index = device.id.index;
  const image =
    typeof source === 'string'
      ? await compileOn(index, source, { ...(arch ? { arch } : {}), name: `${entry}.hip` })
      : source;
  // Starts the queue if needed, and hands over launches recorded before this call: order kept.
  (device.queue() as NativeQueue<NativeHandle>).submit();
  const where = { backend: 'hip', device: device.id, what: `load kernel ${entry}` };
  const a = device.addon as ReturnType<typeof hipAddon>;
  return device.completions.expect(
    device.pending,
    where,
    (id) => a.loadModule(device.handle, image, entry, id),
    (r) => r.value,
  );
}

function createDevice(index: number): HipDevice {
  const a = addon();
  const info = a.deviceInfo(index);
  if (isRefusal(info)) throw refusalError(info, { device: undefined, what: `open hip:${index}` });
  const device: HipDevice = new NativeDevice<NativeHandle>({
    backend: 'hip',
    index,
    name: info.name,
    addon: a,
    completions: realm(),
    open: () => {
      const h = a.open(index);
      if (isRefusal(h)) throw refusalError(h, { device: device.id, what: 'start the queue' });
      return h;
    },
    loadKernel: (d, source, entry) => loadKernel(d, info.arch, source, entry),
    onClosed: (d) => hip.forget(index, d),
  });
  return device;
}

const hip = new BackendBase<HipDevice>({ name: 'hip', probe, create: createDevice });
setQueueClosedHandler((index) => hip.devices.get(index)?.closedElsewhere());

/** The HIP backend: a queue service per AMD GPU, and the hiprtc compiler service. */
export const backend: Backend = hip;
