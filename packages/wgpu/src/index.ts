// Consumers need WebGPU's global types (GPUDevice, ...) for this package's declarations.
/// <reference types="@webgpu/types" preserve="true" />
// The process-wide registry first: device types and exit layers shared with the other backends.

import {
  type Backend,
  type Device,
  deviceId,
  exitingError,
  isExiting,
  outOfRangeError,
  type ProbeResult,
  unavailableError,
} from '@devexit/core';
import { guardState } from '@devexit/native';
import { type Discovery, discover, loadDawn, presetEglPlatform } from './dawn.js';
import { WgpuDevice } from './device.js';
import { exitState } from './state.js';
import { installTracking } from './tracking.js';
import { armMain, armWorker, configureWorkers } from './workers.js';

export { type DeviceInfo, WgpuDevice, WgpuQueue } from './device.js';
export { installWorkerGuards, knownWorkers, terminateWorker } from './workers.js';

const NAME = 'wgpu';

let discovery: Promise<Discovery> | undefined;
const open = new Map<number, Promise<WgpuDevice>>();
const live = new Set<WgpuDevice>();
let adapterUsed = false;

function guardOn(): boolean {
  try {
    return guardState().layers.js;
  } catch {
    return !/^(0|off|false)$/.test(process.env.DEVEXIT_GUARD ?? '');
  }
}

function find(): Promise<Discovery> {
  discovery ??= discover();
  return discovery;
}

function closeAll(explicit: boolean): void {
  for (const d of [...live]) {
    try {
      d.closeNow(explicit);
    } catch {
      // destroy() failing leaves nothing better to do at exit; the others still close.
    }
  }
}

configureWorkers({ guard: guardOn, closeAll });
{
  const loaded = loadDawn();
  if (loaded.dawn) installTracking(loaded.dawn.globals);
  presetEglPlatform();
  if (guardOn()) armMain();
}

async function openDevice(index: number): Promise<WgpuDevice> {
  const found = await find();
  const choice = found.choice;
  if (!choice) throw unavailableError(NAME, `no adapter: tried ${found.tried.join('; ')}`);
  if (index !== 0) throw outOfRangeError('device index', index, '0..0');
  if (isExiting() || exitState.exiting) throw exitingError(`open ${NAME}:${index}`);
  let a: GPUAdapter | null = choice.adapter;
  if (adapterUsed) {
    a = await choice.gpu.requestAdapter({ featureLevel: choice.featureLevel } as GPURequestAdapterOptions);
    if (!a) throw unavailableError(NAME, `no adapter on reopen: ${choice.description}`);
  }
  adapterUsed = true;
  // Ask for what the adapter has: the defaults cap storage buffers at 128 MiB.
  const device = await a.requestDevice({
    requiredLimits: {
      maxStorageBufferBindingSize: a.limits.maxStorageBufferBindingSize,
      maxBufferSize: a.limits.maxBufferSize,
    },
  });
  armWorker();
  const d = new WgpuDevice(
    deviceId(NAME, index),
    device,
    { adapterDescription: choice.description, backend: choice.backend },
    (closed) => {
      live.delete(closed);
      open.delete(index);
    },
  );
  live.add(d);
  return d;
}

/** The WebGPU backend: Dawn through npm `webgpu`. Device 0 is the adapter Dawn picks. */
export const backend: Backend = {
  name: NAME,

  async probe(): Promise<ProbeResult> {
    try {
      const found = await find();
      if (!found.choice) {
        return {
          available: false,
          reason: `no adapter: tried ${found.tried.join('; ')}`,
          versions: { webgpu: found.version },
        };
      }
      return {
        available: true,
        devices: 1,
        versions: { webgpu: found.version, backend: found.choice.backend },
        details: `${found.summary}; tried ${found.tried.join('; ')}`,
      };
    } catch (err) {
      return { available: false, reason: err instanceof Error ? err.message : String(err) };
    }
  },

  async deviceCount(): Promise<number> {
    const found = await find();
    if (!found.choice) throw unavailableError(NAME, `no adapter: tried ${found.tried.join('; ')}`);
    return 1;
  },

  open(index: number): Promise<Device> {
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0) {
      return Promise.reject(
        new TypeError(
          `devexit: index must be an integer >= 0; got ${typeof index === 'string' ? JSON.stringify(index) : String(index)}`,
        ),
      );
    }
    let p = open.get(index);
    if (!p) {
      p = openDevice(index);
      open.set(index, p);
      p.catch(() => open.delete(index));
    }
    return p;
  },
};
