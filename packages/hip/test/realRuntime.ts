// Tests against the real HIP runtime run where libamdhip64 loads (CI installs Debian's
// libamdhip64-5); elsewhere they are skipped with the loader's own reason, printed once.
import { backend } from '@devexit/hip';

// The real runtime, never a stand-in picked up from the environment.
delete process.env.DEVEXIT_HIP_LIBRARY;

export const realProbe = await backend.probe();
export const realMissing: string | undefined =
  !realProbe.available && realProbe.reason.startsWith('library missing') ? realProbe.reason : undefined;
if (realMissing) console.warn(`@devexit/hip: skipping real-runtime tests: ${realMissing}`);
