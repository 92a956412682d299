import { join } from 'node:path';
import { runChild } from '@devexit/testkit';
import { describe, expect, it } from 'vitest';

// Issue 18: one settings grammar for every DEVEXIT_* variable. Each failed before:
// DEVEXIT_WGPU_BACKEND=bogus and DEVEXIT_WGPU_FEATURE_LEVEL=bogus were ignored without a word,
// and DEVEXIT_WGPU_FLAGS=backend=null reported available (Dawn's null backend computes nothing).
const probeChild = join(__dirname, 'fixtures', 'probeChild.cjs');
// No driver: each probe is quick, and what it warns about is the point.
const noDriver = {
  VK_ICD_FILENAMES: '/nonexistent/icd.json',
  __EGL_VENDOR_LIBRARY_FILENAMES: '/nonexistent/egl.json',
};

async function probeWith(env: Record<string, string | undefined>) {
  const r = await runChild({ script: probeChild, args: [], env: { ...noDriver, ...env }, timeoutMs: 30_000 });
  expect(r.code, r.stderr).toBe(0);
  const line = r.stdout.split('\n').find((l) => l.startsWith('{'));
  return {
    out: JSON.parse(line ?? '{}') as { probe: { available: boolean; reason?: string } },
    stderr: r.stderr,
  };
}

describe('wgpu settings, with core grammar', () => {
  it('DEVEXIT_WGPU_BACKEND=bogus: a warning naming it, both backends tried', async () => {
    const { out, stderr } = await probeWith({ DEVEXIT_WGPU_BACKEND: 'bogus' });
    expect(stderr).toContain(
      'devexit: ignoring DEVEXIT_WGPU_BACKEND="bogus": expected one of vulkan, opengles',
    );
    expect(out.probe.reason).toMatch(/tried Vulkan .*; OpenGL ES/);
  });

  it('DEVEXIT_WGPU_BACKEND=" OpenGLES ": trimmed, any case', async () => {
    const { out, stderr } = await probeWith({ DEVEXIT_WGPU_BACKEND: ' OpenGLES ' });
    expect(stderr).not.toContain('DEVEXIT_WGPU_BACKEND');
    expect(out.probe.reason).not.toContain('Vulkan');
  });

  it('DEVEXIT_WGPU_FEATURE_LEVEL=bogus: a warning naming it', async () => {
    const { stderr } = await probeWith({ DEVEXIT_WGPU_FEATURE_LEVEL: 'bogus' });
    expect(stderr).toContain(
      'devexit: ignoring DEVEXIT_WGPU_FEATURE_LEVEL="bogus": expected one of core, compatibility',
    );
  });

  it('DEVEXIT_WGPU_FLAGS=backend=null: unavailable, saying why (not a backend that computes)', async () => {
    const { out } = await probeWith({
      DEVEXIT_WGPU_FLAGS: 'backend=null',
      ...{ VK_ICD_FILENAMES: undefined },
    });
    expect(out.probe.available).toBe(false);
    expect(out.probe.reason).toContain(
      'DEVEXIT_WGPU_FLAGS="backend=null": backend=null is not a Dawn backend that computes',
    );
  });
});
