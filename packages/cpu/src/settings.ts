import { envInteger } from '@devexit/core';

// The cpu backend's settings, read here and nowhere else, with core's grammar: trimmed, a warning
// naming the variable for a bad value (an out-of-range count is clamped), the default kept.

export const MAX_DEVICES = 64;
export const MAX_THREADS = 256;

/** DEVEXIT_CPU_DEVICES (1..64, default 1): how many devices, each with its own queue thread and pool. */
export function configuredDeviceCount(env: NodeJS.ProcessEnv = process.env): number {
  return envInteger('DEVEXIT_CPU_DEVICES', { min: 1, max: MAX_DEVICES }, 1, env);
}

/** DEVEXIT_CPU_THREADS: threads per device, the queue thread included; 0 or unset = min(cores, 8). */
export function configuredThreads(): number {
  return envInteger('DEVEXIT_CPU_THREADS', { min: 0, max: MAX_THREADS }, 0);
}
