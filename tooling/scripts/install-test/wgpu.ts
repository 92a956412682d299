// Strict TypeScript consumer of @devexit/wgpu's types, under TypeScript 5.9 and 7: they name
// WebGPU's objects through the consumer's own lib (TypeScript 7's DOM lib has them), never by
// loading @webgpu/types (which that lib's WebGPU names clash with).
import type { ProbeResult } from '@devexit/core';
import { backend, WgpuDevice } from '@devexit/wgpu';

const probe: ProbeResult = await backend.probe();
const deviceClass: typeof WgpuDevice = WgpuDevice;
// WebGPU's GPUDevice where the consumer's lib declares it (TypeScript 7's DOM lib), else opaque.
type Dawn = WgpuDevice['gpuDevice'];
const lostReason = (d: WgpuDevice): string | undefined => d.lostReason;
const gpu = (d: WgpuDevice): Dawn => d.gpuDevice;
console.log(
  JSON.stringify({
    app: 'ts',
    wgpu: probe.available ? 'available' : probe.reason,
    deviceClass: deviceClass.name,
    accessors: [typeof lostReason, typeof gpu],
  }),
);
