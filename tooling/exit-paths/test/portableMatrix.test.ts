import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { addons, matrix } from './matrix.js';

// The DEVEXIT_PORTABLE build (built by this package's build:native): the glibc-only layers (the
// main-thread TLS guard, on_exit) compiled out, as on musl, macOS and Windows. Its rows are the
// README's platform table for those platforms.
describe('the portable build', () => {
  it('is built (pnpm build runs build:native here)', () => {
    expect(existsSync(addons.portable), addons.portable).toBe(true);
  });
});

matrix('portable', 5);
