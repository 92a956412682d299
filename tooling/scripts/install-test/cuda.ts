// Strict TypeScript consumer of @devexit/cuda: probe() reports, never throws.
import type { ProbeResult } from '@devexit/core';
import { backend } from '@devexit/cuda';

const probe: ProbeResult = await backend.probe();
console.log(
  JSON.stringify({ app: 'ts', cuda: probe.available ? `${probe.devices} device(s)` : probe.reason }),
);
