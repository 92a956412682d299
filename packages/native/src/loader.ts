import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { BindingModule } from './binding.js';

/**
 * Loads devexit_native.node: DEVEXIT_NATIVE_PATH, then this package's build/Release, then
 * build/Debug. Collects every failure and throws one message listing fixes; an addon that
 * exists but fails to load is rethrown as it is.
 */
export function loadBinding(): BindingModule {
  const candidates: string[] = [];
  const override = process.env.DEVEXIT_NATIVE_PATH;
  if (override) candidates.push(override);
  const root = join(__dirname, '..');
  candidates.push(
    join(root, 'build', 'Release', 'devexit_native.node'),
    join(root, 'build', 'Debug', 'devexit_native.node'),
  );
  const tried: string[] = [];
  for (const path of candidates) {
    if (!existsSync(path)) {
      tried.push(`${path}: not found`);
      continue;
    }
    return require(path) as BindingModule;
  }
  throw new Error(
    [
      'devexit: could not find the native addon devexit_native.node.',
      ...tried.map((t) => `  tried ${t}`),
      'Fixes:',
      '  - build it: `npx node-gyp rebuild` in the @devexit/native package (needs python3, make and a C++17 compiler)',
      '  - or point DEVEXIT_NATIVE_PATH at a built devexit_native.node',
      process.platform !== 'linux'
        ? `  - note: the pre-main guard is Linux/glibc only; on ${process.platform} only the JS and atexit layers run`
        : '',
    ]
      .filter(Boolean)
      .join('\n'),
  );
}
