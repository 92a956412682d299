// The cpu backend's settings, read here and nowhere else.

export const MAX_DEVICES = 64;
export const MAX_THREADS = 256;

/** DEVEXIT_CPU_DEVICES (default 1): how many devices, each with its own queue thread and pool. */
export function configuredDeviceCount(env: NodeJS.ProcessEnv = process.env): number | string {
  const raw = env.DEVEXIT_CPU_DEVICES;
  if (raw === undefined || raw === '') return 1;
  const n = /^[0-9]{1,3}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isInteger(n) || n < 1 || n > MAX_DEVICES) {
    return `DEVEXIT_CPU_DEVICES must be an integer in 1..${MAX_DEVICES}; got ${JSON.stringify(raw.slice(0, 80))}`;
  }
  return n;
}

let warned = false;

/** DEVEXIT_CPU_THREADS: threads per device, the queue thread included; 0 or unset = min(cores, 8). */
export function configuredThreads(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.DEVEXIT_CPU_THREADS;
  if (raw === undefined || raw === '' || raw === '0') return 0;
  const n = /^[0-9]{1,3}$/.test(raw) ? Number(raw) : Number.NaN;
  if (Number.isInteger(n) && n >= 1 && n <= MAX_THREADS) return n;
  if (!warned) {
    warned = true;
    process.emitWarning(
      `ignoring DEVEXIT_CPU_THREADS=${JSON.stringify(raw.slice(0, 80))}: expected an integer in 0..${MAX_THREADS}`,
      { code: 'DEVEXIT_SETTING_IGNORED' },
    );
  }
  return 0;
}
