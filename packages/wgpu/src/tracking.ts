import { critical } from '@devexit/core';

/**
 * Every Dawn promise and device of this realm, so an exit can settle them first: dawn.node aborts
 * ("Promise not resolved or rejected") when a Worker's environment is torn down while one of its
 * promises (onSubmittedWorkDone, mapAsync, ...) is still pending. Each is a critical section of
 * its thread (@devexit/core): exits, shutdown() and terminate() wait for them, on every thread.
 * Entered even once exiting began (`closing`): a close's own Dawn calls must be waited for too.
 */

const pending = new Set<Promise<unknown>>();
const devices = new Set<WeakRef<GPUDevice>>();
const MARK = Symbol.for('@devexit/wgpu/tracked');

type Proto = Record<string | symbol, unknown>;

function wrapAsync(proto: Proto | undefined, name: string, onResult?: (value: unknown) => void): void {
  if (!proto) return;
  const original = proto[name];
  if (typeof original !== 'function' || (original as unknown as Proto)[MARK]) return;
  const section = { closing: true, name: `Dawn ${name}` };
  const wrapped = function (this: unknown, ...args: unknown[]) {
    const p = critical(() => (original as (...a: unknown[]) => Promise<unknown>).apply(this, args), section);
    if (p && typeof (p as Promise<unknown>).then === 'function') {
      pending.add(p);
      const done = () => pending.delete(p);
      p.then((v) => {
        done();
        onResult?.(v);
      }, done);
    }
    return p;
  };
  Object.defineProperty(wrapped, MARK, { value: true });
  proto[name] = wrapped;
}

/** Wraps the async methods of Dawn's classes in this realm (once); behaviour is unchanged. */
export function installTracking(globals: Record<string, unknown>): void {
  const proto = (name: string) => (globals[name] as { prototype?: Proto } | undefined)?.prototype;
  wrapAsync(proto('GPUQueue'), 'onSubmittedWorkDone');
  wrapAsync(proto('GPUBuffer'), 'mapAsync');
  wrapAsync(proto('GPUDevice'), 'popErrorScope');
  wrapAsync(proto('GPUDevice'), 'createComputePipelineAsync');
  wrapAsync(proto('GPUDevice'), 'createRenderPipelineAsync');
  wrapAsync(proto('GPUShaderModule'), 'getCompilationInfo');
  wrapAsync(proto('GPUAdapter'), 'requestDevice', (d) => {
    if (d) devices.add(new WeakRef(d as GPUDevice));
  });
}

export function pendingCount(): number {
  return pending.size;
}

/** Destroys every live device of this realm (ours and the app's own). */
export function destroyAllDevices(): void {
  for (const ref of devices) {
    const d = ref.deref();
    devices.delete(ref);
    try {
      d?.destroy();
    } catch {
      // Already destroyed or lost.
    }
  }
}

export function liveDeviceCount(): number {
  let n = 0;
  for (const ref of devices) if (ref.deref()) n++;
  return n;
}

/**
 * Waits until no tracked Dawn promise is pending, or `ms` passed. Returns how many were still
 * pending at the end (0 = safe to tear the environment down).
 */
export async function drainPending(ms: number): Promise<number> {
  const end = performance.now() + ms;
  while (pending.size > 0) {
    const left = end - performance.now();
    if (left <= 0) break;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...pending]),
      new Promise((r) => {
        timer = setTimeout(r, left);
      }),
    ]);
    clearTimeout(timer);
  }
  return pending.size;
}
