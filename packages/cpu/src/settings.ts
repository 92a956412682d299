import { envInteger } from '@devexit/core';

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

/** DEVEXIT_CPU_THREADS: threads per device, the queue thread included; 0 or unset = min(cores, 8). */
export function configuredThreads(): number {
  return envInteger('DEVEXIT_CPU_THREADS', { min: 0, max: MAX_THREADS }, 0);
}
