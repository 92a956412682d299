// Consumers need WebGPU's global types (GPUDevice, ...) for this package's declarations.
/// <reference types="@webgpu/types" preserve="true" />
// The process-wide registry first: device types and exit layers shared with the other backends.

import { isMainThread } from 'node:worker_threads';
import { BackendBase } from '@devexit/backend';
import {
  type Backend,
  closeAtExit,
  currentConfig,
  deviceId,
  exitingError,
  forgetClose,
  isExiting,
  type ProbeResult,
  unavailableError,
} from '@devexit/core';
import '@devexit/native';
import { type Discovery, discover, loadDawn, presetEglPlatform } from './dawn.js';
import { type CloseMode, WgpuDevice } from './device.js';
import { destroyAllDevices, installTracking } from './tracking.js';

export { type CloseMode, type DeviceInfo, WgpuDevice } from './device.js';
export { WgpuQueue } from './queue.js';
export { installWorkerGuards, terminateWorker } from './workers.js';

const NAME = 'wgpu';
const SERVICE = 'queue';

let discovery: Promise<Discovery> | undefined;
let adapterUsed = false;
/** This realm's devices not yet closed: a device whose close() drains and its successor may both be here. */
const live = new Set<WgpuDevice>();

// Closes that run once the process is ending are exit closes: what they drop never settles.
let processEnding = false;
process.prependListener('exit', () => {
  processEnding = true;
});

/** A Worker's stop (@devexit/core: process.exit() in it, the main thread's exit, terminate()). */
function workerStopping(): boolean {
  return !isMainThread && isExiting();
}

function find(): Promise<Discovery> {
  discovery ??= discover();
  return discovery;
}

/** Closes this realm's live devices (of one index, or all); every one is tried, the first error thrown. */
function closeLive(mode: CloseMode, index?: number): void {
  let first: unknown;
  for (const d of [...live]) {
    if (index !== undefined && d.id.index !== index) continue;
    try {
      d.closeNow(mode);
    } catch (err) {
      first ??= err;
    }
  }
  if (first !== undefined) throw first;
}

// One registration per device index and realm, closing whatever devices of that index are live.
// shutdown() first drains them: Dawn finishes what it was given and their promises settle.
function register(d: WgpuDevice): void {
  live.add(d);
  const index = d.id.index;
  closeAtExit(
    d.id,
    SERVICE,
    () => {
      const mode: CloseMode = processEnding ? 'exit' : workerStopping() ? 'worker-exit' : 'drop';
      try {
        closeLive(mode, index);
      } finally {
        // The Worker is going away: the application's own Dawn devices of this realm too.
        if (mode === 'worker-exit') destroyAllDevices();
      }
    },
    { drain: (stop) => drainLive(index, stop) },
  );
}

async function drainLive(index: number, stop: AbortSignal): Promise<void> {
  const ms = currentConfig().timeoutMs;
  await Promise.all([...live].filter((d) => d.id.index === index).map((d) => d.drain(ms, stop)));
}

/** An explicit close: exit skips the device, unless another device of its index is live. */
function unregister(index: number): void {
  if (![...live].some((d) => d.id.index === index)) forgetClose(deviceId(NAME, index), SERVICE);
}

function onClosed(d: WgpuDevice, mode: CloseMode): void {
  live.delete(d);
  wgpu.forget(d.id.index, d);
  if (mode === 'finish') unregister(d.id.index);
}

{
  const loaded = loadDawn();
  if (loaded.dawn) installTracking(loaded.dawn.globals);
  presetEglPlatform();
}

async function createDevice(index: number): Promise<WgpuDevice> {
  const found = await find();
  const choice = found.choice;
  if (!choice) throw unavailableError(NAME, `no adapter: tried ${found.tried.join('; ')}`);
  if (isExiting()) throw exitingError(`open ${NAME}:${index}`);
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
  if (isExiting()) {
    device.destroy();
    throw exitingError(`open ${NAME}:${index}`);
  }
  const d = new WgpuDevice(
    deviceId(NAME, index),
    device,
    { adapterDescription: choice.description, backend: choice.backend },
    onClosed,
  );
  register(d);
  return d;
}

const wgpu = new BackendBase<WgpuDevice>({
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
  create: createDevice,
});

/** The WebGPU backend: Dawn through npm `webgpu`. Device 0 is the adapter Dawn picks. */
export const backend: Backend = wgpu;
