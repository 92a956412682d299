import { backend } from '@devexit/cpu';
import { describe, expect, it } from 'vitest';

const u32 = (b: Uint8Array) => new Uint32Array(b.slice().buffer);

// Cancellation, in this process (shutdown.test.ts has the child-process tests of the graceful path).
describe('cancellation', () => {
  it('abort mid-read: rejects with an AbortError; the read still runs in order; no pending promise, no wrong data (20 rounds)', async () => {
    const device = await backend.open(0);
    const q = device.queue();
    const n = 1 << 20;
    const b = q.alloc(n * 4);
    const fill = device.kernel('fill_u32');
    for (let round = 1; round <= 20; round++) {
      for (let i = 0; i < 10; i++) q.launch(fill, n, [b, { u32: round * 100 + i }, { u32: n }]);
      const ac = new AbortController();
      const read = q.read(b, (n - 1) * 4, 4, { signal: ac.signal });
      const flush = q.flush({ signal: ac.signal });
      const reason = new Error(`round ${round}: changed my mind`);
      ac.abort(reason);
      await expect(read).rejects.toMatchObject({ name: 'AbortError', code: 'ABORT_ERR', cause: reason });
      await expect(flush).rejects.toMatchObject({ name: 'AbortError', code: 'ABORT_ERR' });
      // The queue went on in order: the next read sees the last fill of this round.
      expect(u32(await q.read(b, (n - 1) * 4, 4))[0]).toBe(round * 100 + 9);
    }
    expect((device as unknown as { pending: Set<number> }).pending.size).toBe(0);
    // Aborted before the call: nothing is enqueued; a bad signal is a TypeError.
    await expect(q.read(b, 0, 4, { signal: AbortSignal.abort() })).rejects.toMatchObject({
      name: 'AbortError',
    });
    await expect(q.read(b, 0, 4, { signal: 'soon' as never })).rejects.toMatchObject({
      code: 'ERR_INVALID_ARG_TYPE',
    });
    await expect(backend.open(0, { signal: AbortSignal.abort() })).rejects.toMatchObject({
      name: 'AbortError',
    });
    expect(u32(await q.read(b, 0, 4))[0]).toBe(2009);
    await device.close();
  });
});
