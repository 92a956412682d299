import type { Backend } from '@devexit/core';

/** The backends devexit publishes. Each is an optional peer of the CLI: install the ones you use. */
export const BACKEND_NAMES = ['cpu', 'cuda', 'hip', 'wgpu'] as const;

export type LoadedBackend =
  | { name: string; module: string; path: string; backend: Backend }
  | { name: string; module: string; error: string; installed: boolean };

/** The first line of an error's message, without a stack. */
export function firstLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.split('\n')[0] ?? message;
}

/** True when `err` says `module` itself cannot be found (not one of its own imports). */
export function isNotFound(err: unknown, module: string): boolean {
  const e = err as NodeJS.ErrnoException;
  return e?.code === 'MODULE_NOT_FOUND' && typeof e.message === 'string' && e.message.includes(`'${module}'`);
}

/** Loads @devexit/<name>; "not installed" is a normal answer, anything else is reported. */
export function loadBackend(name: string): LoadedBackend {
  const module = `@devexit/${name}`;
  try {
    const path = require.resolve(module);
    const mod = require(path) as { backend?: Backend };
    if (!mod.backend) return { name, module, error: `${module} exports no backend`, installed: true };
    return { name, module, path, backend: mod.backend };
  } catch (err) {
    if (isNotFound(err, module)) {
      return { name, module, error: `not installed (npm install ${module})`, installed: false };
    }
    return { name, module, error: `failed to load: ${firstLine(err)}`, installed: true };
  }
}

/** Asks a backend's probe(), which must never throw; a hang or a throw becomes the reason. */
export async function probeBackend(
  backend: Backend,
  timeoutMs = 30_000,
): Promise<Awaited<ReturnType<Backend['probe']>>> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`probe() did not answer within ${timeoutMs} ms`)), timeoutMs);
    timer.unref();
  });
  try {
    return await Promise.race([backend.probe(), late]);
  } catch (err) {
    return { available: false, reason: `probe() failed: ${firstLine(err)}` };
  } finally {
    clearTimeout(timer);
  }
}
