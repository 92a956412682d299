import { join } from 'node:path';
import type { BindingModule } from './binding.js';
import { loadAddon } from './loader.js';

/**
 * Loads devexit_native.node through the one devexit loader: DEVEXIT_NATIVE_PATH, else this
 * package's build/Release or build/Debug, else the prebuild in @devexit/native-<platform>. When
 * nothing loads, the error lists every attempt and the fixes.
 */
export function loadBinding(): BindingModule {
  return loadAddon<BindingModule>({
    name: 'devexit_native',
    packageDir: join(__dirname, '..'),
    envVar: 'DEVEXIT_NATIVE_PATH',
    platformPackages: '@devexit/native',
    exports: ['isExiting', 'closeAll', 'applySettings', 'state'],
  });
}
