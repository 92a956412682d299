// Tests against the real HIP runtime run where libamdhip64 loads (CI installs Debian's
// libamdhip64-5); elsewhere each skips with the loader's own reason, printed once.
import type { ProbeResult } from '@devexit/core';
import { backend } from '@devexit/hip';

// The real runtime, never a stand-in picked up from the environment.
delete process.env.DEVEXIT_HIP_LIBRARY;

let result: Promise<{ probe: ProbeResult; missing: string | undefined }> | undefined;

export function realRuntime() {
  result ??= backend.probe().then((probe) => {
    const missing = !probe.available && probe.reason.startsWith('library missing') ? probe.reason : undefined;
    if (missing && required()) {
      // CI installs the runtime: a missing one there is a broken setup, not a reason to skip.
      throw new Error(`DEVEXIT_REQUIRE_BACKENDS names hip but the real runtime is missing: ${missing}`);
    }
    if (missing) console.warn(`@devexit/hip: skipping real-runtime tests: ${missing}`);
    return { probe, missing };
  });
  return result;
}

function required(): boolean {
  return (process.env.DEVEXIT_REQUIRE_BACKENDS ?? '').split(',').includes('hip');
}
