// Strict TypeScript consumer of @devexit/hip: probe() reports, never throws.
import type { ProbeResult } from '@devexit/core';
import { backend } from '@devexit/hip';

const probe: ProbeResult = await backend.probe();
console.log(
  JSON.stringify({ app: 'ts', hip: probe.available ? `${probe.devices} device(s)` : probe.reason }),
);
