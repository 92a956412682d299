import { execFileSync } from 'node:child_process';
import type { ProbeResult } from '@devexit/core';

/**
 * Whether Dawn finds an adapter here, asked in a child so test collection stays synchronous.
 * Tests that need an adapter are skipped with this reason printed.
 */
function probeInChild(): ProbeResult {
  try {
    const out = execFileSync(
      process.execPath,
      [
        '-e',
        "require('@devexit/wgpu').backend.probe().then((p) => console.log('PROBE ' + JSON.stringify(p)))",
      ],
      { cwd: __dirname, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 60_000 },
    );
    const line = out.split('\n').find((l) => l.startsWith('PROBE '));
    if (line) return JSON.parse(line.slice(6)) as ProbeResult;
    return { available: false, reason: `probe printed nothing: ${out.slice(-200)}` };
  } catch (err) {
    return {
      available: false,
      reason: `probe child failed: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
}

export const probe: ProbeResult = probeInChild();
export const unavailable = !probe.available;
if (!probe.available && (process.env.DEVEXIT_REQUIRE_BACKENDS ?? '').split(',').includes('wgpu')) {
  // CI installs a Vulkan driver Dawn accepts: a missing adapter there is a broken setup.
  throw new Error(`DEVEXIT_REQUIRE_BACKENDS names wgpu but Dawn finds no adapter: ${probe.reason}`);
}
if (!probe.available) {
  console.warn(`@devexit/wgpu tests that need a WebGPU adapter are skipped: ${probe.reason}`);
}
