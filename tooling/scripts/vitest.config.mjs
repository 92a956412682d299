import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: { pool: 'forks', include: ['test/**/*.test.mjs'], testTimeout: 120_000 },
});
