import { defineConfig } from 'vitest/config';

// `pnpm test:device` only (scripts/test-device.mjs): these need an NVIDIA GPU.
export default defineConfig({
  test: {
    pool: 'forks',
    include: ['device/**/*.test.ts'],
    testTimeout: 240_000,
    hookTimeout: 60_000,
    fileParallelism: false,
  },
});
