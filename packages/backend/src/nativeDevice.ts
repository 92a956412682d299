import {
  BUILTIN_KERNEL_SIGNATURES,
  type BuiltinKernelName,
  currentConfig,
  type Device,
  type DeviceId,
  deviceClosedError,
  deviceId,
  exitingError,
  isExiting,
  type Kernel,
  type Queue,
  reportRegistered,
} from '@devexit/core';
import { backendError, checkBuiltinName, checkEntry, checkKernelSource } from './checks.js';
import type { Completions } from './completions.js';
import { NativeKernel, NativeQueue, type QueueAddon, type QueueOwner } from './nativeQueue.js';

export interface NativeDeviceOptions<H> {
  backend: string;
  index: number;
  /** For people: "cpu (8 threads)", "AMD Instinct MI210". */
  name: string;
  addon: QueueAddon<H>;
  completions: Completions;
  /** Starts the process-wide native queue service of this device (or throws the typed error). */
  open(): H;
  /**
   * Loads a user kernel onto this device and returns its native id (> 0). The source and entry
   * were checked for their types; the rest is the backend's.
   */
  loadKernel?(device: NativeDevice<H>, source: string | Uint8Array, entry: string): Promise<number>;
  /** This realm's object for the device closed. */
  onClosed?(device: NativeDevice<H>): void;
}

/**
 * A device of a native backend in one realm (the main thread or a Worker): the native service is
 * process-wide, this object is the realm's view of it. Its close is the one close: explicit,
 * at exit, or by closeServices() from any realm.
 */
export class NativeDevice<H> implements Device, QueueOwner<H> {
  readonly id: DeviceId;
  readonly backend: string;
  readonly name: string;
  readonly addon: QueueAddon<H>;
  readonly completions: Completions;
  readonly pending = new Set<number>();
  readonly #options: NativeDeviceOptions<H>;
  #handle: H | undefined;
  /** The service's closed word, where the runtime gives a view of it (else a call per check). */
  #closedView: Uint32Array | undefined;
  #queue: NativeQueue<H> | undefined;
  #closed = false;
  #closing: Promise<void> | undefined;
  #settled = false;
  /** Resolved by the native "closed" notice (closedElsewhere), which comes after every answer. */
  #noticed: (() => void) | undefined;

  constructor(options: NativeDeviceOptions<H>) {
    this.#options = options;
    this.backend = options.backend;
    this.id = deviceId(options.backend, options.index);
    this.name = options.name;
    this.addon = options.addon;
    this.completions = options.completions;
  }

  get handle(): H {
    if (this.#handle === undefined) throw new Error('devexit: internal: the queue is not started');
    return this.#handle;
  }

  get closed(): boolean {
    if (this.#closed) return true;
    const view = this.#closedView;
    if (view !== undefined) return view[0] !== 0;
    return this.#handle !== undefined && this.addon.closed(this.#handle);
  }

  check(what: string): void {
    if (isExiting()) throw exitingError(what);
    if (this.closed) throw deviceClosedError(this.id, what);
  }

  queue(): Queue {
    this.check('start the queue');
    if (!this.#queue) {
      const handle = this.#options.open();
      this.#handle = handle;
      const flag = this.addon.closedFlag?.(handle);
      this.#closedView = flag ? new Uint32Array(flag) : undefined;
      this.#queue = new NativeQueue(this);
      reportRegistered(this.id, 'queue', 'native');
    }
    return this.#queue;
  }

  kernel(name: BuiltinKernelName): Kernel {
    const i = checkBuiltinName(name);
    this.check(`get kernel ${name}`);
    return new NativeKernel(name, -1 - i, this, BUILTIN_KERNEL_SIGNATURES[name]);
  }

  async loadKernel(source: string | Uint8Array, entry: string): Promise<Kernel> {
    checkKernelSource(source, `${this.backend} kernel source (a string) or binary (a Uint8Array)`);
    checkEntry(entry);
    this.check(`load kernel ${entry}`);
    const load = this.#options.loadKernel;
    if (!load) throw backendError(this.backend, 'this backend loads no user kernels');
    const id = await load(this, source, entry);
    return new NativeKernel(entry, id, this);
  }

  /**
   * Finishes everything enqueued before it (from every realm), then stops the service, releases
   * what it holds and unregisters its exit close. Idempotent.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async #close(): Promise<void> {
    const h = this.#handle;
    if (h !== undefined && !this.closed) {
      this.#queue?.submit();
      this.#closed = true;
      await this.completions
        .expect(
          this.pending,
          { backend: this.backend, device: this.id, what: 'close' },
          (id) => this.addon.drain(h, id),
          () => undefined,
        )
        .catch(() => undefined);
    }
    this.#closed = true;
    const error = h !== undefined ? this.addon.close(h) : undefined;
    // Another closer (shutdown(), another realm) may have drained the service: its answers are
    // queued to this realm, not yet delivered. The "closed" notice comes after all of them: what
    // still waits then was dropped. Bounded, should the notice never come.
    if (h !== undefined && this.pending.size > 0 && !this.#settled) await this.#notice();
    this.#settle();
    if (error) throw backendError(this.backend, `closing ${this.backend}:${this.id.index} failed: ${error}`);
  }

  #notice(): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, currentConfig().timeoutMs);
      this.#noticed = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** The native service closed (closeServices(), another realm, exit): settle what waits here. */
  closedElsewhere(): void {
    // The notice names a device index: it may be about an earlier service of that index.
    if (this.#handle === undefined || !this.addon.closed(this.#handle)) return;
    this.#closed = true;
    this.#settle();
    this.#noticed?.();
  }

  #settle(): void {
    if (this.#settled) return;
    this.#settled = true;
    this.completions.rejectAll(this.pending, () => deviceClosedError(this.id, 'finish queued work'));
    this.#options.onClosed?.(this);
  }
}
