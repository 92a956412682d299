import { expect, it } from 'vitest';

/** The standard queue binding of a native backend (devexit_queue_binding.hpp), as far as used here. */
export interface RawQueueAddon {
  setDispatcher(fn: (id: number, status: number, error: string | null) => void): void;
  setRef(ref: boolean): void;
  alloc(handle: unknown, bytes: number): number;
  submit(handle: unknown, words: Float64Array, count: number): number;
  flush(handle: unknown, id: number): number;
  drain(handle: unknown, id: number): number;
  close(handle: unknown): string | undefined;
}

export interface NativeLaunchBoundsOptions {
  name: string;
  label?: string | undefined;
  /** The addon, loaded after @devexit/native, with no JS layer of its own in this realm. */
  addon: () => RawQueueAddon;
  /** Opens device 0 through the addon: its handle. */
  open: (addon: RawQueueAddon) => unknown;
}

const OUT_OF_RANGE = 4; // devexit_protocol.hpp's kOutOfRange
const FILL_U32 = -1; // built-in 0

/**
 * One test: a launch that reaches the native queue with a buffer too small for its n (JS checks
 * bypassed) is refused by the shared queue with kOutOfRange, and nothing is written.
 */
export function defineNativeLaunchBounds(options: NativeLaunchBoundsOptions): void {
  const label = options.label ? ` (${options.label})` : '';
  it(`${options.name}: a built-in launch with a too-small buffer is refused natively with kOutOfRange${label}`, async () => {
    const addon = options.addon();
    const waiting = new Map<number, (r: { status: number; error: string | null }) => void>();
    addon.setDispatcher((id, status, error) => waiting.get(id)?.({ status, error }));
    addon.setRef(true);
    let next = 1;
    const settle = (send: (id: number) => number) =>
      new Promise<{ status: number; error: string | null }>((resolve, reject) => {
        const id = next++;
        waiting.set(id, resolve);
        const status = send(id);
        if (status !== 0) reject(new Error(`refused with status ${status}`));
      });
    const handle = options.open(addon);
    const small = addon.alloc(handle, 16); // 4 elements
    expect(small).toBeGreaterThan(0);
    // fill_u32(out = small, value = 7, n = 1024), grid 1024: 1,020 elements past the end.
    const words = new Float64Array([7, FILL_U32, 1024, 1, 1, 3, 1, small, 2, 7, 2, 1024]);
    expect(addon.submit(handle, words, words.length)).toBe(0);
    const r = await settle((id) => addon.flush(handle, id));
    expect(r.status, String(r.error)).toBe(OUT_OF_RANGE);
    expect(r.error).toMatch(/fill_u32: argument 0 holds fewer than the elements it would touch/);
    await settle((id) => addon.drain(handle, id));
    expect(addon.close(handle)).toBeUndefined();
    addon.setRef(false);
  });
}
