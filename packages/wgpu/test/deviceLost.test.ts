// A GPUDevice lost under devexit (here destroyed behind its back, as a driver reset would end
// it): everything pending and everything after rejects with ERR_DEVEXIT_DEVICE_LOST, Dawn's
// reason in the message; nothing resolves for work that did not run; probe() and a new open()
// work. In children, on each Dawn backend this machine has: Vulkan (lavapipe) and OpenGL ES.
import { join } from 'node:path';
import { outcomes, runMany, testRuns } from '@devexit/testkit';
import { describe, expect, it } from 'vitest';
import { unavailable } from './probe.js';

const fixture = join(__dirname, 'fixtures', 'deviceLost.cjs');
const RUNS = testRuns(5);
const LOST = (what: string) =>
  `ERR_DEVEXIT_DEVICE_LOST: devexit: cannot ${what}: wgpu:0 was lost: device was destroyed (reason: destroyed)`;

const ADAPTERS = [
  // What Dawn picks by default: lavapipe where Mesa's Vulkan driver is installed.
  { name: 'the default adapter', env: {}, backend: /^(vulkan|opengles)$/ },
  // No Vulkan driver: Dawn's OpenGL ES backend (the README's second adapter).
  {
    name: 'OpenGL ES (no Vulkan driver)',
    env: { VK_ICD_FILENAMES: '/nonexistent/icd.json' },
    backend: /^opengles$/,
  },
] as const;

describe.skipIf(unavailable)('wgpu after device loss (real Dawn)', () => {
  for (const a of ADAPTERS) {
    it(`${a.name}: pending and later launch/alloc/write/flush/read fail with ERR_DEVEXIT_DEVICE_LOST; probe() and a new open() work (${RUNS} runs)`, async () => {
      const results = await runMany(RUNS, {
        script: fixture,
        env: { ...a.env, DEVEXIT_WGPU_BACKEND: undefined },
        timeoutMs: 60_000,
      });
      console.log(`device loss on ${a.name}: ${JSON.stringify(outcomes(results))}`);
      for (const r of results) {
        const tell = `code=${r.code} signal=${r.signal}\nstdout: ${r.stdout.slice(-1500)}\nstderr: ${r.stderr.slice(-800)}`;
        expect(r.code, tell).toBe(0);
        const out = JSON.parse(r.stdout.split('\n').find((l) => l.startsWith('{')) ?? '{}');
        expect(out, tell).toEqual({
          // Submitted before the loss, pending at it: rejected, never resolved.
          flushPending: LOST('flush'),
          readPending: LOST('read'),
          lostReason: 'device was destroyed (reason: destroyed)',
          closed: true,
          launchAfter: LOST('launch fill_u32'),
          allocAfter: LOST('alloc'),
          writeAfter: LOST('write'),
          flushAfter: LOST('flush'),
          readAfter: LOST('read'),
          probeAfter: expect.stringMatching(/^available \((vulkan|opengles)\)$/),
          newDevice: true,
          newRead: [7, 7, 7, 7],
          // Closing a lost device: nothing to drain, it resolves.
          closeLost: 'resolved',
        });
        expect(/^available \((\w+)\)$/.exec(out.probeAfter)?.[1]).toMatch(a.backend);
        // The new device is the one the exit closes, once.
        expect(
          r.report.map((e) => `${e.device.type}:${e.device.index}/${e.service} ${e.outcome}`),
          tell,
        ).toEqual(['wgpu:0/queue ok']);
      }
    });
  }
});
