import { backendError, checkBuiltinName, checkEntry, checkKernelSource } from '@devexit/backend';
import {
  abortError,
  BUILTIN_KERNELS,
  type BuiltinKernelName,
  currentConfig,
  type Device,
  type DeviceId,
  deviceClosedError,
  exitingError,
  isExiting,
  type Kernel,
  type Queue,
} from '@devexit/core';
import { builtinSource, type KernelSource, parseUserKernel } from './kernels.js';
import { WgpuQueue } from './queue.js';
import { WgpuKernel } from './resources.js';
import { drainPending } from './tracking.js';

export interface DeviceInfo {
  adapterDescription: string;
  backend: string;
}

/**
 * How a close treats what is pending:
 * - 'finish': device.close(): everything enqueued runs and every promise settles with its result
 *   (bounded by the deadline; what is still pending then rejects with ERR_DEVEXIT_DEVICE_CLOSED);
 * - 'drop': closeServices(): the batch not yet handed to Dawn is dropped, pending promises reject
 *   with ERR_DEVEXIT_DEVICE_CLOSED;
 * - 'exit': an exit layer: dropped, and pending promises never settle (the process is ending);
 * - 'worker-exit': a Worker's own exit drain (process.exit or a stop request): dropped, pending
 *   promises reject with ERR_DEVEXIT_EXITING while the Worker settles Dawn's promises.
 */
export type CloseMode = 'finish' | 'drop' | 'exit' | 'worker-exit';

interface Waiting {
  /** What Dawn settles. */
  source: Promise<unknown>;
  /** What the caller holds. */
  promise: Promise<unknown>;
  resolve(v: unknown): void;
  reject(e: Error): void;
  what: string;
  silenced: boolean;
}

/** One GPUDevice of this realm and its queue: wgpu device `index` as this realm sees it. */
export class WgpuDevice implements Device {
  readonly id: DeviceId;
  readonly backend = 'wgpu';
  readonly name: string;
  /** The Dawn device, for code that needs WebGPU directly. Destroyed on close. */
  readonly gpuDevice: GPUDevice;
  readonly info: DeviceInfo;
  #state: 'open' | 'closing' | 'closed' = 'open';
  #queue: WgpuQueue | undefined;
  readonly #kernels = new Map<KernelSource, WgpuKernel>();
  readonly #waiting = new Set<Waiting>();
  #closing: Promise<void> | undefined;
  readonly #onClosed: (d: WgpuDevice, mode: CloseMode) => void;

  constructor(
    id: DeviceId,
    gpuDevice: GPUDevice,
    info: DeviceInfo,
    onClosed: (d: WgpuDevice, mode: CloseMode) => void,
  ) {
    this.id = id;
    this.gpuDevice = gpuDevice;
    this.info = info;
    this.name = info.adapterDescription;
    this.#onClosed = onClosed;
  }

  /** True from the moment a close begins. */
  get closed(): boolean {
    return this.#state !== 'open';
  }

  /** Throws the typed error for a call after close or once exiting. */
  check(what: string): void {
    if (isExiting()) throw exitingError(what);
    if (this.#state !== 'open') throw deviceClosedError(this.id, what);
  }

  queue(): Queue {
    this.check('start the queue');
    this.#queue ??= new WgpuQueue(this);
    return this.#queue;
  }

  kernel(name: BuiltinKernelName): Kernel {
    const i = checkBuiltinName(name);
    this.check(`get kernel ${name}`);
    return this.internal(builtinSource(BUILTIN_KERNELS[i] as BuiltinKernelName), name);
  }

  /** The compiled pipeline of a built-in or internal kernel, made once per device. */
  internal(source: KernelSource, name = source.entry): WgpuKernel {
    let k = this.#kernels.get(source);
    if (!k) {
      k = this.#compile(name, source);
      this.#kernels.set(source, k);
    }
    return k;
  }

  // An explicit layout from the parsed bindings: a binding the shader does not use is fine, and
  // a mismatch with the WGSL fails here (loadKernel), never at a launch.
  #compile(name: string, source: KernelSource): WgpuKernel {
    const gpu = this.gpuDevice;
    const module = gpu.createShaderModule({ code: source.code });
    const layout = gpu.createBindGroupLayout({
      entries: source.bindings.map((b, binding) => ({
        binding,
        visibility: GPUShaderStage.COMPUTE,
        buffer: {
          type: b.access === 'uniform' ? 'uniform' : b.access === 'read' ? 'read-only-storage' : 'storage',
        },
      })),
    });
    const pipeline = gpu.createComputePipeline({
      layout: gpu.createPipelineLayout({ bindGroupLayouts: [layout] }),
      compute: { module, entryPoint: source.entry },
    });
    return new WgpuKernel(name, source, pipeline, layout, this);
  }

  async loadKernel(source: string | Uint8Array, entry: string): Promise<Kernel> {
    checkKernelSource(source, 'WGSL source (a string, or its UTF-8 bytes in a Uint8Array)');
    checkEntry(entry);
    this.check(`load kernel ${entry}`);
    const code = typeof source === 'string' ? source : new TextDecoder().decode(source);
    const parsed = parseUserKernel(code, entry);
    this.gpuDevice.pushErrorScope('validation');
    const kernel = this.#compile(entry, parsed);
    const error = await this.track(this.gpuDevice.popErrorScope(), `load kernel ${entry}`);
    if (error) throw backendError('wgpu', `kernel ${entry} failed to compile: ${error.message}`);
    return kernel;
  }

  /**
   * Settles with `p`, or as a close of the device decides (see CloseMode), or with an AbortError
   * when `signal` aborts first (p's result is then dropped).
   */
  track<T>(p: Promise<T>, what: string, signal?: AbortSignal): Promise<T> {
    let resolve!: (v: unknown) => void;
    let reject!: (e: Error) => void;
    const promise = new Promise<unknown>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    const w: Waiting = { source: p, promise, resolve, reject, what, silenced: false };
    this.#waiting.add(w);
    if (signal) {
      const abort = () => {
        if (this.#waiting.delete(w)) w.reject(abortError(signal, what));
      };
      signal.addEventListener('abort', abort, { once: true });
      const detach = () => signal.removeEventListener('abort', abort);
      promise.then(detach, detach);
    }
    p.then(
      (v) => {
        if (!this.#waiting.delete(w) || w.silenced) return;
        w.resolve(v);
      },
      (e) => {
        if (!this.#waiting.delete(w) || w.silenced) return;
        w.reject(
          this.#state === 'closed'
            ? deviceClosedError(this.id, what)
            : backendError('wgpu', `${what} failed: ${e instanceof Error ? e.message : String(e)}`),
        );
      },
    );
    return promise as Promise<T>;
  }

  /**
   * Hands over what was recorded, waits until everything enqueued before it ran and every
   * pending promise settled with its result (bounded by the deadline), then destroys the device
   * and unregisters its exit close. Idempotent; a second caller gets the first close.
   */
  close(): Promise<void> {
    this.#closing ??= this.#finish();
    return this.#closing;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async #finish(): Promise<void> {
    if (this.#state !== 'open') return;
    this.#state = 'closing';
    const end = performance.now() + currentConfig().timeoutMs;
    await this.drain(end - performance.now());
    this.closeNow('finish');
    await drainPending(Math.max(0, end - performance.now()));
  }

  /**
   * Hands over what was recorded, then waits until everything enqueued ran and every pending
   * promise settled with its result, for up to `ms` or until `stop` aborts. True if it all did.
   * For close() and shutdown() (which refuses new work meanwhile).
   */
  async drain(ms: number, stop?: AbortSignal): Promise<boolean> {
    if (this.#state === 'closed') return true;
    this.#queue?.submit();
    const work: Promise<unknown>[] = [...this.#waiting].map((w) => w.source);
    work.push(this.gpuDevice.queue.onSubmittedWorkDone());
    let finished = false;
    await within(
      Promise.allSettled(work).then(() => {
        finished = true;
      }),
      ms,
      stop,
    );
    return finished;
  }

  /**
   * The synchronous close (closeServices(), exit layers, a Worker's exit, and the end of
   * close()): no new work, pending promises as `mode` says, GPUDevice.destroy() (Dawn first
   * waits for the work it was given). Idempotent.
   */
  closeNow(mode: CloseMode): void {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    if (mode !== 'finish') this.#queue?.discard();
    const waiting = [...this.#waiting];
    this.#waiting.clear();
    for (const w of waiting) {
      if (mode === 'exit') {
        w.silenced = true;
        continue;
      }
      // The caller may have dropped it (a fire-and-forget flush): a close must not turn that into
      // an unhandled rejection. Handlers the caller attached still see the error.
      w.promise.catch(() => {});
      w.reject(
        mode === 'worker-exit'
          ? exitingError(w.what)
          : deviceClosedError(this.id, `finish queued work (${w.what})`),
      );
    }
    try {
      this.gpuDevice.destroy();
    } finally {
      this.#onClosed(this, mode);
    }
  }
}

async function within(p: Promise<unknown>, ms: number, stop?: AbortSignal): Promise<void> {
  if (stop?.aborted) return;
  let timer: NodeJS.Timeout | undefined;
  let onStop: (() => void) | undefined;
  await Promise.race([
    p,
    new Promise((r) => {
      timer = setTimeout(r, Math.max(0, ms));
      onStop = () => r(undefined);
      stop?.addEventListener('abort', onStop, { once: true });
    }),
  ]);
  clearTimeout(timer);
  if (onStop) stop?.removeEventListener('abort', onStop);
}
