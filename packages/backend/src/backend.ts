import {
  type AbortOptions,
  abortError,
  type Backend,
  checkSignal,
  type Device,
  exitingError,
  isExiting,
  outOfRangeError,
  type ProbeResult,
  unavailableError,
  withAbort,
} from '@devexit/core';
import { checkInteger, checkOptions } from './checks.js';

export interface BackendOptions<D extends Device> {
  name: string;
  /** Whether the backend runs here. May throw: that becomes { available: false, reason }. */
  probe(): ProbeResult | Promise<ProbeResult>;
  /** This realm's object for device `index` (valid and in range). */
  create(index: number): D | Promise<D>;
}

/**
 * probe -> count -> open, the same for every backend: probe() never throws, deviceCount() and
 * open() reject with ERR_DEVEXIT_UNAVAILABLE when it says unavailable, open() gives one device
 * object per index in this realm until it closes.
 */
export class BackendBase<D extends Device> implements Backend {
  readonly name: string;
  /** This realm's open devices. */
  readonly devices = new Map<number, D>();
  readonly #options: BackendOptions<D>;
  readonly #opening = new Map<number, Promise<D>>();

  constructor(options: BackendOptions<D>) {
    this.#options = options;
    this.name = options.name;
  }

  async probe(): Promise<ProbeResult> {
    try {
      return await this.#options.probe();
    } catch (err) {
      return { available: false, reason: err instanceof Error ? err.message : String(err) };
    }
  }

  async deviceCount(): Promise<number> {
    const probe = await this.probe();
    if (!probe.available) throw unavailableError(this.name, probe.reason);
    return probe.devices;
  }

  /**
   * Aborting stops waiting (an AbortError); a device created meanwhile stays this realm's, and
   * the next open() returns it.
   */
  async open(index: number, options?: AbortOptions): Promise<Device> {
    checkInteger(index, 'index', 0, 0xffffffff);
    const signal = checkSignal(checkOptions<AbortOptions>(options, ['signal'], 'open() options').signal);
    if (isExiting()) throw exitingError(`open ${this.name}:${index}`);
    const what = `open ${this.name}:${index}`;
    if (signal?.aborted) throw abortError(signal, what);
    return withAbort(this.#open(index), signal, what);
  }

  async #open(index: number): Promise<Device> {
    const count = await this.deviceCount();
    if (index >= count) throw outOfRangeError(`${this.name} device index`, index, `0..${count - 1}`);
    const known = this.devices.get(index);
    if (known && !known.closed) return known;
    // One creation per index at a time: concurrent open() calls share it (create may await).
    let opening = this.#opening.get(index);
    if (!opening) {
      opening = Promise.resolve(index)
        .then((i) => this.#options.create(i))
        .then((device) => {
          this.devices.set(index, device);
          return device;
        })
        .finally(() => this.#opening.delete(index));
      this.#opening.set(index, opening);
    }
    return opening;
  }

  /** A device of this realm closed: the next open() makes a new one. */
  forget(index: number, device: D): void {
    if (this.devices.get(index) === device) this.devices.delete(index);
  }
}
