import { join } from 'node:path';

/**
 * Path of the stand-in libamdhip64 (a test double for machines without an AMD GPU; CI only).
 * Point DEVEXIT_HIP_LIBRARY at it to run @devexit/hip on it.
 */
export const standinHipPath: string = join(__dirname, '..', 'build', 'Release', 'libamdhip64.so');

/** Kernels the stand-in has host implementations for (the built-ins plus two for tests). */
export const STANDIN_KERNELS: readonly string[] = [
  'fill_u32',
  'copy',
  'saxpy_f32',
  'sum_f32',
  'add_u32',
  'sleep_us',
];
