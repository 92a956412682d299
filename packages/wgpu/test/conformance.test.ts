import { join } from 'node:path';
import { defineConformance } from '@devexit/conformance';
import { describe } from 'vitest';
import { unavailable } from './probe.js';

// The 'device owned by a busy Worker, main exits' row needs @devexit/wgpu on the main thread (Dawn
// aborts in the Worker's teardown, where no JS runs): the fixture's main never imports it, so the
// children preload it, as the README tells apps to. workerGuards.test.ts shows the row without it.
const register = join(__dirname, '..', 'dist', 'register.js');

describe.skipIf(unavailable)('wgpu conformance on Dawn', () => {
  defineConformance({
    name: 'wgpu',
    load: async () => (await import('@devexit/wgpu')).backend,
    childModule: '@devexit/wgpu',
    // A dispatch costs more on lavapipe than a launch elsewhere: fewer keep the signal row short.
    childEnv: { NODE_OPTIONS: `--require ${register}`, DEVEXIT_CONFORMANCE_SIGNAL_LAUNCHES: '300' },
    runs: 20,
  });
});
