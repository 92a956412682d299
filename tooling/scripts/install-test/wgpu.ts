// Strict TypeScript consumer of @devexit/wgpu's types (its public types include WebGPU's).
import type { ProbeResult } from '@devexit/core';
import { backend, WgpuDevice } from '@devexit/wgpu';

const probe: ProbeResult = await backend.probe();
const deviceClass: typeof WgpuDevice = WgpuDevice;
console.log(
  JSON.stringify({
    app: 'ts',
    wgpu: probe.available ? 'available' : probe.reason,
    deviceClass: deviceClass.name,
  }),
);
