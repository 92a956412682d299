import { backend } from '@devexit/wgpu';

/** Whether Dawn finds an adapter here; tests that need one are skipped with this reason printed. */
export const probe = await backend.probe();
export const unavailable = !probe.available;
if (!probe.available) {
  console.warn(`@devexit/wgpu tests that need a WebGPU adapter are skipped: ${probe.reason}`);
}
