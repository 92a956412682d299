import type { Backend } from '@devexit/core';

export const BACKEND_NAMES = ['cpu', 'cuda', 'hip', 'wgpu'] as const;

export type LoadedBackend =
  | { name: string; module: string; backend: Backend }
  | { name: string; module: string; error: string; installed: boolean };

/** Loads @devexit/<name>; "not installed" is a normal answer, anything else is reported. */
export function loadBackend(name: string): LoadedBackend {
  const module = `@devexit/${name}`;
  try {
    const mod = require(module) as { backend?: Backend };
    if (!mod.backend) return { name, module, error: `${module} exports no backend`, installed: true };
    return { name, module, backend: mod.backend };
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'MODULE_NOT_FOUND' && e.message.includes(`'${module}'`)) {
      return { name, module, error: 'not installed', installed: false };
    }
    return { name, module, error: e.message.split('\n')[0] ?? String(err), installed: true };
  }
}
