import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { installLayout, removeLayout, run, STACK_LINE, show } from './helpers.js';

// What a machine without any Dawn adapter looks like (see @devexit/wgpu's README).
const NO_ADAPTER = {
  VK_ICD_FILENAMES: '/nonexistent/icd.json',
  __EGL_VENDOR_LIBRARY_FILENAMES: '/nonexistent/egl.json',
  DEVEXIT_WGPU_BACKEND: undefined,
};

describe('devexit doctor (workspace install)', () => {
  it('--json: the guard is armed on the main thread; every backend listed, with a reason when unavailable', () => {
    const r = run(['doctor', '--json'], { DEVEXIT_REQUIRE_BACKENDS: undefined });
    expect(r.status, show(r)).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.libc).toMatch(/^glibc \d+\.\d+/);
    expect(report.native).toMatchObject({ loaded: true, abi: 1 });
    expect(report.guard.tls).toEqual({ armed: true, by: 'init_array' });
    expect(report.guard.layers).toEqual({ js: true, tls: true, atexit: true });
    expect(report.backends.map((b: { name: string }) => b.name)).toEqual(['cpu', 'cuda', 'hip', 'wgpu']);
    expect(report.backends[0]).toMatchObject({
      name: 'cpu',
      installed: true,
      available: true,
      required: false,
    });
    // Installed in the workspace; this machine has no NVIDIA GPU (and maybe no libcuda at all).
    expect(report.backends[1]).toMatchObject({ name: 'cuda', installed: true, required: false });
    for (const b of report.backends) {
      if (!b.available) expect(typeof b.reason === 'string' && b.reason.length > 0, b.name).toBe(true);
    }
    expect(report.problems).toEqual([]);
  });

  it('text: DEVEXIT_GUARD=0 shows the layers off; the report is on stdout', () => {
    const r = run(['doctor'], { DEVEXIT_GUARD: '0', DEVEXIT_REQUIRE_BACKENDS: undefined });
    expect(r.status, show(r)).toBe(0);
    expect(r.stdout).toContain('exit layers  js OFF, main-thread guard OFF, atexit OFF');
    expect(r.stdout).toMatch(/cpu {3}available: \d+ devices?/);
    expect(r.stdout).toMatch(/cuda {2}(available|unavailable): /);
    expect(r.stdout).toContain('no problems found');
  });

  it('DEVEXIT_REQUIRE_BACKENDS=cpu: exit 0 and cpu marked required', () => {
    const r = run(['doctor', '--json'], { DEVEXIT_REQUIRE_BACKENDS: 'cpu' });
    expect(r.status, show(r)).toBe(0);
    expect(JSON.parse(r.stdout).backends[0]).toMatchObject({ name: 'cpu', required: true, available: true });
  });

  it('DEVEXIT_REQUIRE_BACKENDS is trimmed and read in any case, as every DEVEXIT_* value', () => {
    const r = run(['doctor', '--json'], { DEVEXIT_REQUIRE_BACKENDS: ' CPU ' });
    expect(r.status, show(r)).toBe(0);
    expect(JSON.parse(r.stdout).backends[0]).toMatchObject({ name: 'cpu', required: true, available: true });
  });

  it('DEVEXIT_REQUIRE_BACKENDS naming an unavailable backend: exit 1, the reason says why', () => {
    const r = run(['doctor', '--json'], {
      DEVEXIT_REQUIRE_BACKENDS: 'cpu,wgpu,cuda',
      DEVEXIT_CUDA_LIBRARY: '/nonexistent/libcuda.so.1',
      ...NO_ADAPTER,
    });
    expect(r.status, show(r)).toBe(1);
    const report = JSON.parse(r.stdout);
    expect(report.problems).toHaveLength(2);
    expect(report.problems[0]).toMatch(
      /^cuda is required \(DEVEXIT_REQUIRE_BACKENDS\) but unavailable: library missing: \/nonexistent\/libcuda\.so\.1/,
    );
    expect(report.problems[1]).toMatch(
      /^wgpu is required \(DEVEXIT_REQUIRE_BACKENDS\) but unavailable: no adapter: tried Vulkan/,
    );
    expect(r.stderr).toContain('devexit doctor: 2 problem(s): cuda is required');
  });

  it('DEVEXIT_REQUIRE_BACKENDS naming an unknown backend: exit 1', () => {
    const r = run(['doctor'], { DEVEXIT_REQUIRE_BACKENDS: 'cpu, metal' });
    expect(r.status, show(r)).toBe(1);
    expect(r.stdout).toContain(
      'DEVEXIT_REQUIRE_BACKENDS names an unknown backend "metal" (known: cpu, cuda, hip, wgpu)',
    );
  });

  it('an addon that fails to load (DEVEXIT_NATIVE_PATH at a file that is not one): diagnosed, exit 1, no stack', () => {
    const bogus = join(tmpdir(), `devexit-not-an-addon-${process.pid}.node`);
    writeFileSync(bogus, 'this is not a shared object\n');
    const env = { DEVEXIT_NATIVE_PATH: bogus, DEVEXIT_REQUIRE_BACKENDS: undefined };
    const r = run(['doctor'], env);
    expect(r.status, show(r)).toBe(1);
    expect(r.stdout).toMatch(
      /native {7}@devexit\/native FAILED to load: .*(invalid ELF header|file too short|is not a shared object)/,
    );
    expect(r.stdout).toContain('exit layers  unknown: @devexit/native did not load');
    // Backends load @devexit/native with the package: they fail at import and say why.
    expect(r.stdout).toContain(
      'cpu   unavailable: failed to load: needs @devexit/native, which did not load',
    );
    expect(r.stdout).toContain(
      'wgpu  unavailable: failed to load: needs @devexit/native, which did not load',
    );
    expect(r.stdout).toContain('problems');
    expect(r.stderr).toMatch(/^devexit doctor: \d+ problem\(s\): @devexit\/native failed to load/m);
    expect(r.stdout + r.stderr).not.toMatch(STACK_LINE);

    const json = run(['doctor', '--json'], env);
    expect(json.status, show(json)).toBe(1);
    const report = JSON.parse(json.stdout);
    expect(report.native).toMatchObject({ loaded: false, installed: true });
    expect(report.guard).toBeUndefined();
    expect(report.backends.filter((b: { available: boolean }) => b.available)).toEqual([]);

    // Help never loads the addon.
    const help = run(['--help'], env);
    expect(help.status, show(help)).toBe(0);
  });
});

describe('devexit doctor outside the workspace (npm layout, no backend installed)', () => {
  const layouts: string[] = [];
  afterAll(() => {
    for (const l of layouts) removeLayout(l);
  });
  const layout = (native: 'built' | 'no-addon' | 'absent') => {
    const l = installLayout(native);
    layouts.push(l.root);
    return l;
  };

  it('native with its addon: exit 0, every backend "not installed" with the npm command', () => {
    const { bin } = layout('built');
    const r = run(['doctor', '--json'], { DEVEXIT_REQUIRE_BACKENDS: undefined }, bin);
    expect(r.status, show(r)).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.native.loaded).toBe(true);
    expect(report.guard.tls.armed).toBe(true);
    for (const b of report.backends) {
      expect(b).toEqual({
        name: b.name,
        installed: false,
        available: false,
        required: false,
        reason: `not installed (npm install @devexit/${b.name})`,
      });
    }
  });

  it('the addon missing: doctor says what is wrong and how to fix it, exit 1, no stack; --help still works', () => {
    const { bin } = layout('no-addon');
    const r = run(['doctor'], { DEVEXIT_REQUIRE_BACKENDS: undefined, DEVEXIT_NATIVE_PATH: undefined }, bin);
    expect(r.status, show(r)).toBe(1);
    expect(r.stdout).toMatch(/native {7}@devexit\/native FAILED to load: .*devexit_native\.node/);
    // The loader's own lines (what it tried, how to fix it) are kept, indented.
    expect(r.stdout).toMatch(/^ {15}\S.*(tried|build|DEVEXIT_NATIVE_PATH)/m);
    expect(r.stderr).toMatch(/devexit doctor: 1 problem\(s\): @devexit\/native failed to load/);
    expect(r.stdout + r.stderr).not.toMatch(STACK_LINE);
    for (const args of [['--help'], ['--version'], ['doctor', '--help']]) {
      const h = run(args, {}, bin);
      expect(h.status, show(h)).toBe(0);
    }
  });

  it('@devexit/native not installed at all: "npm install @devexit/native", exit 1', () => {
    const { bin } = layout('absent');
    const r = run(['doctor', '--json'], { DEVEXIT_REQUIRE_BACKENDS: undefined }, bin);
    expect(r.status, show(r)).toBe(1);
    const report = JSON.parse(r.stdout);
    expect(report.native).toEqual({
      loaded: false,
      installed: false,
      error: 'not installed (npm install @devexit/native)',
    });
    expect(report.problems).toEqual(['@devexit/native is not installed (npm install @devexit/native)']);
  });

  it('demo with no backend installed: every backend skipped with the reason, exit 1', () => {
    const { bin } = layout('built');
    const r = run(['demo', '--json', '--runs', '1'], {}, bin);
    expect(r.status, show(r)).toBe(1);
    const result = JSON.parse(r.stdout);
    expect(result.rows).toEqual([]);
    expect(result.skipped.map((s: { reason: string }) => s.reason).sort()).toEqual([
      'not installed (npm install @devexit/cpu)',
      'not installed (npm install @devexit/cuda)',
      'not installed (npm install @devexit/hip)',
      'not installed (npm install @devexit/wgpu)',
    ]);
    expect(r.stderr).toContain('devexit demo: no backend could run');
  });
});
