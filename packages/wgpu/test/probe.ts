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

/** The Dawn backend the probe picked ('vulkan', 'opengles'), as probe() reports it. */
export const dawnBackend: string | undefined = probe.available ? probe.versions.backend : undefined;

/**
 * Where Dawn's only adapter is OpenGL ES, some Vulkan-only crashes do not happen (measured with
 * webgpu 0.6.2 on Mesa 25 llvmpipe, 2 cores): worker.terminate() during submits did not abort in
 * 0 of 20 runs, and a busy Worker at main's exit aborted in 3 of 10 (6 of 6 on lavapipe).
 */
export const GLES_NO_TERMINATE_CRASH =
  `probe(): Dawn backend ${dawnBackend} — Dawn's OpenGL ES backend does not abort on worker.terminate() ` +
  'during submits (0/20 measured), so there is no crash for this control to show';

/**
 * Env for children whose main thread never loads @devexit/wgpu (raw Dawn, Worker-only apps): on
 * OpenGL ES nothing sets EGL_PLATFORM for them (a Worker cannot: the README tells such apps to set
 * it), so the test sets it as such an app would.
 */
export const withoutDevexitEnv: Record<string, string> =
  dawnBackend === 'opengles' && process.env.EGL_PLATFORM === undefined ? { EGL_PLATFORM: 'surfaceless' } : {};
