import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

// An application of @devexit/cpu bundled as people bundle a Node program (rolldown here, the
// repository's bundler; esbuild --bundle and webpack do the same): with @devexit/* inside the
// bundle, the addons cannot be found beside their packages, and the error must say so (it named
// the application as the package to install or rebuild); with @devexit/* kept out, it runs.

const fixture = join(__dirname, 'fixtures', 'bundledApp.cjs');
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function bundle(external: RegExp[]): Promise<string> {
  const fromScripts = createRequire(require.resolve('@devexit/scripts/package.json'));
  const { build } = (await import(fromScripts.resolve('rolldown'))) as {
    build: (options: Record<string, unknown>) => Promise<unknown>;
  };
  const app = mkdtempSync(join(tmpdir(), 'devexit-bundled-'));
  dirs.push(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'bundled-app', private: true }));
  const file = join(app, 'dist', 'app.cjs');
  await build({
    input: fixture,
    platform: 'node',
    external,
    output: { file, format: 'cjs' },
    logLevel: 'silent',
  });
  return file;
}

/**
 * As a user runs it: without the NODE_PATH of pnpm's bin shims (it lists the workspace's store,
 * where the platform packages are, and require.resolve({ paths }) searches it too).
 */
function run(file: string) {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.NODE_OPTIONS;
  delete env.NODE_PATH;
  return spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 30_000, env });
}

describe('a bundled application', () => {
  it("@devexit/* inside the bundle: ERR_DEVEXIT_UNAVAILABLE saying it looks bundled and what to do, naming devexit's package, not the application", async () => {
    const r = run(await bundle([]));
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('ERR_DEVEXIT_UNAVAILABLE');
    expect(r.stderr).toMatch(
      /it looks bundled \(esbuild, webpack, ncc\).*keep @devexit\/\* out of the bundle/,
    );
    expect(r.stderr).toMatch(/an optional dependency of @devexit\/native;/);
    expect(r.stderr).not.toMatch(/bundled-app/);
  }, 60_000);

  it('@devexit/* kept out of the bundle (external), installed beside it: it runs', async () => {
    const file = await bundle([/^@devexit\//]);
    const scope = join(file, '..', '..', 'node_modules', '@devexit');
    mkdirSync(scope, { recursive: true });
    symlinkSync(join(__dirname, '..'), join(scope, 'cpu'), 'dir');
    const r = run(file);
    expect({ status: r.status, stdout: r.stdout.trim() }, r.stderr).toEqual({
      status: 0,
      stdout: '[7,7,7,7]',
    });
  }, 60_000);
});
