import { defineConfig } from 'vitest/config';

// Native code runs in forked processes: a crash takes down one fork, not the runner.
export default defineConfig({
  test: {
    pool: 'forks',
    include: ['test/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
});
