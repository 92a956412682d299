import { loadFixture } from '@devexit/standins';
import { describe, expect, it } from 'vitest';

// In-process checks that need the fixture addon (a devexit.h consumer).
describe('devexit.h from a consumer addon', () => {
  it('a backend built against a newer ABI gets a clear error, not a crash', () => {
    const fx = loadFixture();
    const r = fx.abiMismatch();
    expect(r.status).toBe(-3);
    const { version } = require('@devexit/native/package.json') as { version: string };
    expect(r.message).toBe(
      `devexit: this addon needs registry ABI 2 but the loaded @devexit/native provides ABI 1 (@devexit/native ${version}); upgrade @devexit/native`,
    );
  });

  it('forget drops a native registration once', () => {
    const fx = loadFixture();
    expect(fx.registerIdle('standin', 40, 'loop')).toBe(0);
    expect(fx.registerIdle('standin', 40, 'loop')).toBe(1); // second registration: no-op
    expect(fx.forget(40)).toBe(0);
    expect(fx.forget(40)).toBe(2); // DEVEXIT_NOT_FOUND
  });
});
