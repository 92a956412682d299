import { defineNativeBackend, type NativeBackendKit, NativeDevice, type NativeQueue } from '@devexit/backend';
import type { ProbeResult } from '@devexit/core';
import { ADDON, type HipAddon, type NativeHandle, type NativeProbe } from './addon.js';

type HipDevice = NativeDevice<NativeHandle>;

let probed: NativeProbe | undefined;

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

// Loads the library and initialises HIP on this thread, once per realm.
function probe(addon: HipAddon): ProbeResult {
  probed ??= addon.probe();
  const p = probed;
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

/**
 * A compile on the compiler service; device >= 0 is made current first (for hiprtc's default
 * target). Arguments were checked.
 */
export function compileOnService(
  device: number,
  source: string,
  name: string,
  args: string[],
  signal?: AbortSignal,
): Promise<Uint8Array> {
  const a = hip.addon();
  hip.compiler().checkNotExiting('compile');
  return hip.compiler().run(
    'compile',
    (id) => a.compile(source, name, args, device, id),
    (r) => r.data ?? new Uint8Array(0),
    signal,
  );
}

async function loadKernel(device: HipDevice, arch: string, source: string | Uint8Array, entry: string) {
  const image =
    typeof source === 'string'
      ? await compileOnService(
          device.id.index,
          source,
          `${entry}.hip`,
          arch ? [`--offload-arch=${arch}`] : [],
        )
      : source;
  // Starts the queue if needed, and hands over launches recorded before this call: order kept.
  (device.queue() as NativeQueue<NativeHandle>).submit();
  const a = hip.addon();
  return device.completions.expect(
    device.pending,
    { backend: 'hip', device: device.id, what: `load kernel ${entry}` },
    (id) => a.loadModule(device.handle, image, entry, id),
    (r) => r.value,
  );
}

function createDevice(index: number, kit: NativeBackendKit<HipAddon, NativeHandle, HipDevice>): HipDevice {
  const a = kit.addon();
  const info = a.deviceInfo(index);
  if ('status' in info) throw kit.refusalError(info, { device: undefined, what: `open hip:${index}` });
  return new NativeDevice<NativeHandle>(
    kit.deviceOptions(
      index,
      info.name,
      () => a.open(index),
      (d, source, entry) => loadKernel(d, info.arch, source, entry),
    ),
  );
}

/** The HIP backend's table: a queue service per AMD GPU, and the hiprtc compiler service. */
export const hip = defineNativeBackend<HipAddon, NativeHandle>({
  name: 'hip',
  addon: ADDON,
  vendorErrorProperty: 'hipError',
  probe,
  device: createDevice,
});
