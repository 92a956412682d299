import {
  type AbortOptions,
  checkSignal,
  type DeviceBuffer,
  type DeviceId,
  type Grid,
  isExiting,
  type Kernel,
  type KernelArg,
  type KernelParam,
  type Queue,
} from '@devexit/core';
import {
  type CheckedArg,
  checkCopy,
  checkFill,
  checkGrid,
  checkLaunchArgs,
  checkOptions,
  checkRead,
  checkSize,
  checkWrite,
  encodeLaunchArgs,
  foreignBufferError,
  foreignKernelError,
  freedBufferError,
  gridCount,
} from './checks.js';
import { type CompletionAddon, type Completions, Status, statusError } from './completions.js';

/** The JS surface of devexit_queue_binding.hpp, on a handle of the backend's native device. */
export interface QueueAddon<H> extends CompletionAddon {
  submit(h: H, words: Float64Array, count: number): number;
  /** A buffer id (> 0), or -status. */
  alloc(h: H, bytes: number): number;
  write(h: H, buffer: number, offset: number, data: Uint8Array): number;
  read(h: H, buffer: number, offset: number, bytes: number, id: number): number;
  flush(h: H, id: number): number;
  drain(h: H, id: number): number;
  close(h: H): string | undefined;
  closed(h: H): boolean;
  /** A view of the service's closed word (1 once its close began), where external buffers work. */
  closedFlag?(h: H): ArrayBuffer | undefined;
}

/** Operation codes of the batch (devexit_protocol.hpp's QueueOp; test/protocol.test.ts checks them). */
const OP = { free: 2, fill: 5, copy: 6, launch: 7 } as const;
/** Kernel argument kinds (devexit_protocol.hpp's ArgKind, devexit_cpu_kernel.h's). */
export const ARG_KIND = { buffer: 1, u32: 2, i32: 3, f32: 4 } as const;

/** What NativeQueue needs from its device. */
export interface QueueOwner<H> {
  readonly id: DeviceId;
  readonly backend: string;
  readonly addon: QueueAddon<H>;
  readonly completions: Completions;
  /** Ids of this device's pending completions in this realm. */
  readonly pending: Set<number>;
  /** Throws the typed error if the device is closed or the process is exiting. */
  check(what: string): void;
  /** True once the device is closed (cheap: read on every launch). */
  readonly closed: boolean;
  /** The native handle (the service is started by the time a queue exists). */
  readonly handle: H;
  /** The device's close (a queue's asyncDispose). */
  close(): Promise<void>;
}

const BUFFER = Symbol('devexit.buffer');

export class NativeBuffer implements DeviceBuffer {
  readonly device: DeviceId;
  readonly size: number;
  /** @internal */
  readonly [BUFFER]: { id: number; owner: object; freed: boolean };
  constructor(device: DeviceId, size: number, id: number, owner: object) {
    this.device = device;
    this.size = size;
    this[BUFFER] = { id, owner, freed: false };
  }
}

/** A kernel of one device: a built-in (id < 0) or one it loaded (id > 0). */
export class NativeKernel implements Kernel {
  readonly name: string;
  /** @internal */
  readonly id: number;
  /** @internal */
  readonly owner: object;
  /** @internal */
  readonly signature: readonly KernelParam[] | undefined;
  constructor(name: string, id: number, owner: object, signature?: readonly KernelParam[]) {
    this.name = name;
    this.id = id;
    this.owner = owner;
    this.signature = signature;
  }
}

/**
 * The Queue of every native backend. Launches, fills, copies and frees are recorded into one
 * batch per queue and handed to the native service in one call (at the end of the current
 * synchronous run, or sooner when the batch is large); every other call first hands over the
 * batch, so the order of commands is the order of calls.
 */
export class NativeQueue<H> implements Queue {
  readonly #d: QueueOwner<H>;
  #words = new Float64Array(1024);
  #count = 0;
  #scheduled = false;
  /** A batch the native layer refused as malformed: the next read or flush reports it. */
  #deferred: Error | undefined;

  constructor(owner: QueueOwner<H>) {
    this.#d = owner;
  }

  #where(what: string) {
    return { backend: this.#d.backend, device: this.#d.id, what };
  }

  #fail(status: number, what: string): Error {
    return statusError(status, this.#where(what));
  }

  #buffer(v: unknown, argument: string, what: string): NativeBuffer {
    const state = v instanceof NativeBuffer ? v[BUFFER] : undefined;
    if (!state || state.owner !== this.#d) {
      throw foreignBufferError(argument, `${this.#d.backend}:${this.#d.id.index}`, v);
    }
    if (state.freed) throw freedBufferError(what, argument);
    return v as NativeBuffer;
  }

  /** Room for n more words. */
  #reserve(n: number): Float64Array {
    if (this.#count + n > this.#words.length) {
      if (this.#count > 0 && this.#count + n > 65536) this.submit();
      if (this.#count + n > this.#words.length) {
        const bigger = new Float64Array(Math.max(this.#words.length * 2, this.#count + n));
        bigger.set(this.#words.subarray(0, this.#count));
        this.#words = bigger;
      }
    }
    if (!this.#scheduled) {
      this.#scheduled = true;
      queueMicrotask(this.#onMicrotask);
    }
    return this.#words;
  }

  readonly #onMicrotask = () => {
    this.#scheduled = false;
    this.submit();
  };

  /** Hands the recorded batch to the native service now. */
  submit(): void {
    if (this.#count === 0) return;
    const count = this.#count;
    this.#count = 0;
    const status = this.#d.addon.submit(this.#d.handle, this.#words, count);
    // Closed meanwhile: the batch is dropped, as queued work is at close. Malformed: a bug, said
    // by the next read or flush.
    if (status === Status.badArgs) this.#deferred ??= this.#fail(status, 'run a batch of launches');
  }

  alloc(bytes: number): DeviceBuffer {
    checkSize(bytes, 'bytes');
    this.#d.check('alloc');
    this.submit();
    const id = this.#d.addon.alloc(this.#d.handle, bytes);
    if (id < 0) throw this.#fail(-id, 'alloc');
    return new NativeBuffer(this.#d.id, bytes, id, this.#d);
  }

  free(buffer: DeviceBuffer): void {
    const b = this.#buffer(buffer, 'buffer', 'free');
    this.#d.check('free');
    b[BUFFER].freed = true;
    const w = this.#reserve(2);
    w[this.#count++] = OP.free;
    w[this.#count++] = b[BUFFER].id;
  }

  write(buffer: DeviceBuffer, data: ArrayBufferView, offset = 0): void {
    const b = this.#buffer(buffer, 'buffer', 'write');
    const { bytes } = checkWrite(b.size, data, offset);
    this.#d.check('write');
    this.submit();
    const status = this.#d.addon.write(this.#d.handle, b[BUFFER].id, offset, bytes);
    if (status !== Status.ok) throw this.#fail(status, 'write');
  }

  read(buffer: DeviceBuffer, offset = 0, bytes?: number, options?: AbortOptions): Promise<Uint8Array> {
    try {
      const b = this.#buffer(buffer, 'buffer', 'read');
      const { bytes: n } = checkRead(b.size, offset, bytes);
      const signal = checkSignal(checkOptions<AbortOptions>(options, ['signal'], 'read() options').signal);
      this.#d.check('read');
      this.submit();
      const deferred = this.#takeDeferred();
      if (deferred) return Promise.reject(deferred);
      const d = this.#d;
      return d.completions.expect(
        d.pending,
        this.#where('read'),
        (id) => d.addon.read(d.handle, b[BUFFER].id, offset, n, id),
        (r) => r.data ?? new Uint8Array(0),
        signal,
      );
    } catch (err) {
      return Promise.reject(err);
    }
  }

  fill(buffer: DeviceBuffer, value: number, offset = 0, bytes?: number): void {
    const b = this.#buffer(buffer, 'buffer', 'fill');
    const { bytes: n } = checkFill(b.size, value, offset, bytes);
    this.#d.check('fill');
    const w = this.#reserve(5);
    w[this.#count++] = OP.fill;
    w[this.#count++] = b[BUFFER].id;
    w[this.#count++] = value;
    w[this.#count++] = offset;
    w[this.#count++] = n;
  }

  copy(src: DeviceBuffer, dst: DeviceBuffer, bytes?: number, srcOffset = 0, dstOffset = 0): void {
    const s = this.#buffer(src, 'src', 'copy');
    const t = this.#buffer(dst, 'dst', 'copy');
    const { bytes: n } = checkCopy(s.size, t.size, bytes, srcOffset, dstOffset);
    this.#d.check('copy');
    const w = this.#reserve(6);
    w[this.#count++] = OP.copy;
    w[this.#count++] = s[BUFFER].id;
    w[this.#count++] = t[BUFFER].id;
    w[this.#count++] = n;
    w[this.#count++] = srcOffset;
    w[this.#count++] = dstOffset;
  }

  /** The id of a live buffer of this device, else -1 (no throw: the launch's fast path). */
  readonly #bufferId = (v: unknown): number => {
    if (!(v instanceof NativeBuffer)) return -1;
    const state = v[BUFFER];
    return state.owner === this.#d && !state.freed ? state.id : -1;
  };

  launch(kernel: Kernel, grid: Grid, args: readonly KernelArg[]): void {
    const d = this.#d;
    if (!(kernel instanceof NativeKernel) || kernel.owner !== d) {
      throw foreignKernelError(`${d.backend}:${d.id.index}`, kernel);
    }
    // The common launch (a grid count, arguments as the signature wants) is checked and encoded
    // in one pass straight into the batch; anything else goes through the full checks.
    let gx = gridCount(grid);
    let gy = 1;
    let gz = 1;
    if (gx < 0) [gx, gy, gz] = checkGrid(grid);
    const w = this.#reserve(6 + 2 * (Array.isArray(args) ? args.length : 0));
    const at = this.#count;
    let end = encodeLaunchArgs(args, kernel.signature, this.#bufferId, w, at + 6);
    if (end < 0) end = this.#encodeChecked(kernel, args, at + 6);
    if (isExiting() || d.closed) d.check(`launch ${kernel.name}`);
    if (gx === 0 || gy === 0 || gz === 0) return;
    w[at] = OP.launch;
    w[at + 1] = kernel.id;
    w[at + 2] = gx;
    w[at + 3] = gy;
    w[at + 4] = gz;
    w[at + 5] = (end - at - 6) / 2;
    this.#count = end;
  }

  /** checkLaunchArgs (throws the one wording for bad arguments), then encodes from `at`. */
  #encodeChecked(kernel: NativeKernel, args: readonly KernelArg[], at: number): number {
    const checked = checkLaunchArgs(args, {
      kernelName: kernel.name,
      signature: kernel.signature,
      buffer: (v, argument) => {
        if (!(v instanceof NativeBuffer)) return undefined;
        const b = this.#buffer(v, argument, 'launch');
        return { buffer: b[BUFFER].id, size: b.size };
      },
    });
    const w = this.#words; // launch() reserved room for every argument
    let i = at;
    for (const a of checked as CheckedArg<number>[]) {
      w[i++] = ARG_KIND[a.kind];
      w[i++] = a.kind === 'buffer' ? a.buffer : a.value;
    }
    return i;
  }

  flush(options?: AbortOptions): Promise<void> {
    try {
      const signal = checkSignal(checkOptions<AbortOptions>(options, ['signal'], 'flush() options').signal);
      this.#d.check('flush');
      this.submit();
      const deferred = this.#takeDeferred();
      if (deferred) return Promise.reject(deferred);
      const d = this.#d;
      return d.completions.expect(
        d.pending,
        this.#where('flush'),
        (id) => d.addon.flush(d.handle, id),
        () => undefined,
        signal,
      );
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Closes the device (its queue is its one service): `await using q = device.queue()`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.#d.close();
  }

  #takeDeferred(): Error | undefined {
    const e = this.#deferred;
    this.#deferred = undefined;
    return e;
  }
}
