import {
  type Backend,
  type DeviceId,
  deviceClosedError,
  deviceId,
  exitingError,
  isExiting,
  type ProbeResult,
  unavailableError,
} from '@devexit/core';
import { type AddonSpec, loadAddon } from '@devexit/native/loader';
import { BackendBase } from './backend.js';
import { type BackendError, backendError, setVendorErrorProperty } from './checks.js';
import { type Completed, Completions, Status, statusError } from './completions.js';
import type { NativeDevice, NativeDeviceOptions } from './nativeDevice.js';
import type { QueueAddon } from './nativeQueue.js';

/**
 * How a native call refuses, in every backend alike: a devexit status, or an object with the
 * status, the native message, the vendor's error name, and `unavailable` when the vendor library
 * did not load.
 */
export type NativeRefusal =
  | number
  | { status: number; error?: string | null; errorName?: string; unavailable?: true };

export function isRefusal(v: unknown): v is Exclude<NativeRefusal, number> {
  return typeof v === 'object' && v !== null && typeof (v as { status?: unknown }).status === 'number';
}

/** What a native backend is: the filled-in table `defineNativeBackend` turns into a backend. */
export interface NativeBackendSpec<A extends QueueAddon<H>, H, D extends NativeDevice<H>> {
  /** The backend's name, which is also its device type ('cpu'). */
  name: string;
  /** Its addon: file name, package directory, env override, the functions that identify it. */
  addon: AddonSpec;
  /** Also carries `vendorError` on this backend's errors under this name ('hipError'). */
  vendorErrorProperty?: string;
  /**
   * Whether it runs here, from the loaded addon (loaded after @devexit/native). A throw, an
   * addon that does not load included, is `{ available: false, reason }`.
   */
  probe(addon: A): ProbeResult;
  /** The versions a probe reports when the addon itself does not load. */
  versions?(): Record<string, string>;
  /** This realm's object for device `index` (valid and in range). */
  device(index: number, kit: NativeBackendKit<A, H, D>): D | Promise<D>;
}

/** Where a native command runs, for its errors. */
export interface Where {
  device: DeviceId | undefined;
  what: string;
}

/** The compiler service of a backend: `<name>-host:0/compiler`, one per process. */
export interface CompilerWiring {
  /** Its pseudo-device: `<name>-host:0` (it belongs to no GPU). */
  readonly id: DeviceId;
  /** Runs a native compile that answers an id: the answer mapped, or the typed error. */
  run<T>(
    what: string,
    start: (id: number) => number | NativeRefusal,
    map: (r: Completed) => T,
    signal?: AbortSignal,
  ): Promise<T>;
  /** Throws the typed error while the process exits. */
  checkNotExiting(what: string): void;
  /** Hears that the compiler service closed (explicitly, elsewhere, at exit). */
  onClosed(fn: () => void): void;
  /** Rejects what waits for it with "closed". */
  rejectPending(what: string): void;
}

/** What a backend gets back: the Backend object and the shared wiring its files use. */
export interface NativeBackendKit<A extends QueueAddon<H>, H, D extends NativeDevice<H>> {
  readonly name: string;
  /** The Backend (probe -> count -> open, one device per index in this realm). */
  readonly backend: BackendBase<D> & Backend;
  /** The addon, loaded once (after @devexit/native): or the loader's ERR_DEVEXIT_UNAVAILABLE. */
  addon(): A;
  /** This realm's promises waiting for the addon's service threads. */
  realm(): Completions;
  /** The options of a NativeDevice of this backend; `open()` may return a refusal. */
  deviceOptions(
    index: number,
    name: string,
    open: () => H | NativeRefusal,
    loadKernel?: NativeDeviceOptions<H>['loadKernel'],
  ): NativeDeviceOptions<H>;
  /** The typed error for a native refusal: one shape for every backend. */
  refusalError(r: NativeRefusal, where: Where): Error;
  /** ERR_DEVEXIT_BACKEND from this backend. */
  error(message: string, vendorError?: string): BackendError;
  /** The compiler service's wiring (backends without one never call it). */
  compiler(): CompilerWiring;
}

/**
 * One native backend from its table: loads the addon after @devexit/native, wraps probe(),
 * keeps one Completions per realm whose "closed" notices reach the device (queue) or the
 * compiler, maps every native refusal to the same typed errors, and wires compiles to the
 * compiler service. cpu, cuda and hip are written with it; see "Adding a backend".
 */
export function defineNativeBackend<A extends QueueAddon<H>, H, D extends NativeDevice<H> = NativeDevice<H>>(
  spec: NativeBackendSpec<A, H, D>,
): NativeBackendKit<A, H, D> {
  const { name } = spec;
  let addon: A | undefined;
  let completions: Completions | undefined;
  let compilerWiring: CompilerWiring | undefined;
  const closedHandlers = new Map<string, () => void>();
  const prop = spec.vendorErrorProperty;
  if (prop) setVendorErrorProperty(name, prop);

  const decorate = (err: Error): Error => {
    const e = err as Error & Record<string, unknown>;
    if (prop && typeof e.vendorError === 'string' && e[prop] === undefined) e[prop] = e.vendorError;
    return err;
  };

  const kit: NativeBackendKit<A, H, D> = {
    name,
    backend: new BackendBase<D>({
      name,
      probe: () => {
        let a: A;
        try {
          a = kit.addon();
        } catch (err) {
          const out: ProbeResult = { available: false, reason: (err as Error).message };
          const versions = spec.versions?.();
          if (versions) out.versions = versions;
          return out;
        }
        return spec.probe(a);
      },
      create: (index) => spec.device(index, kit),
    }),
    addon(): A {
      if (addon) return addon;
      // The registry first: the addon registers its closes with it.
      require('@devexit/native');
      addon = loadAddon<A>(spec.addon);
      return addon;
    },
    realm(): Completions {
      if (!completions) {
        const c = new Completions(kit.addon());
        c.decorate = decorate;
        c.onClosed = (index, service) => {
          if (service === 'queue') kit.backend.devices.get(index)?.closedElsewhere();
          else closedHandlers.get(service)?.();
        };
        completions = c;
      }
      return completions;
    },
    deviceOptions(index, deviceName, open, loadKernel) {
      const options: NativeDeviceOptions<H> = {
        backend: name,
        index,
        name: deviceName,
        addon: kit.addon(),
        completions: kit.realm(),
        open: () => {
          const h = open();
          if (typeof h === 'number' || isRefusal(h)) {
            throw kit.refusalError(h as NativeRefusal, {
              device: deviceId(name, index),
              what: 'start the queue',
            });
          }
          return h;
        },
        onClosed: (d) => kit.backend.forget(index, d as D),
      };
      if (loadKernel) options.loadKernel = loadKernel;
      return options;
    },
    refusalError(r, where): Error {
      if (typeof r === 'number') return decorate(statusError(r, { backend: name, ...where }));
      if (r.unavailable) return unavailableError(name, `library missing: ${r.error ?? 'it did not load'}`);
      if (r.status === Status.startFailed || r.status === Status.vendorError) {
        return decorate(backendError(name, `cannot ${where.what}: ${r.error ?? 'failed'}`, r.errorName));
      }
      return decorate(statusError(r.status, { backend: name, ...where }, r.error, r.errorName));
    },
    error: (message, vendorError) => decorate(backendError(name, message, vendorError)) as BackendError,
    compiler(): CompilerWiring {
      compilerWiring ??= compilerOf(kit, closedHandlers);
      return compilerWiring;
    },
  };
  return kit;
}

function compilerOf<A extends QueueAddon<H>, H, D extends NativeDevice<H>>(
  kit: NativeBackendKit<A, H, D>,
  closedHandlers: Map<string, () => void>,
): CompilerWiring {
  const pending = new Set<number>();
  const id = deviceId(`${kit.name}-host`, 0);
  const listeners: (() => void)[] = [];
  closedHandlers.set('compiler', () => {
    for (const fn of listeners) fn();
  });
  return {
    id,
    run(what, start, map, signal) {
      const where = { backend: kit.name, device: id, what };
      return kit.realm().expect(
        pending,
        where,
        (n) => {
          const r = start(n);
          if (isRefusal(r)) throw kit.refusalError(r, where);
          return r;
        },
        map,
        signal,
      );
    },
    checkNotExiting(what) {
      if (isExiting()) throw exitingError(what);
    },
    onClosed(fn) {
      listeners.push(fn);
    },
    rejectPending(what) {
      kit.realm().rejectAll(pending, () => deviceClosedError(id, what));
    },
  };
}
