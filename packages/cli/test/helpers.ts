import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export const cliRoot = join(__dirname, '..');
export const bin = join(cliRoot, 'dist', 'bin.js');
export const cliPackage = JSON.parse(readFileSync(join(cliRoot, 'package.json'), 'utf8')) as {
  version: string;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  optionalDependencies?: Record<string, string>;
};

export interface Run {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs `node <bin> ...args` in a child; env values of undefined are removed. */
export function run(args: string[], env: Record<string, string | undefined> = {}, script = bin): Run {
  const childEnv: NodeJS.ProcessEnv = { ...process.env };
  delete childEnv.NODE_OPTIONS;
  // pnpm's bin shims (vitest's included) set NODE_PATH to the virtual store: resolution must not see it.
  delete childEnv.NODE_PATH;
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete childEnv[k];
    else childEnv[k] = v;
  }
  const r = spawnSync(process.execPath, [script, ...args], {
    encoding: 'utf8',
    timeout: 180_000,
    env: childEnv,
  });
  return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

/** Every line of a V8 stack trace looks like this. */
export const STACK_LINE = /^\s+at .+\(?.*:\d+:\d+\)?$/m;

/** One line for assertion messages. */
export const show = (r: Run) =>
  `status=${r.status} signal=${r.signal}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;

const resolveDir = (module: string) => dirname(require.resolve(`${module}/package.json`));

/**
 * An install outside the workspace, as npm lays it out: node_modules/@devexit/{cli,core} and,
 * as asked, @devexit/native with its built addon, without it, or not at all. No backend.
 */
export function installLayout(native: 'built' | 'no-addon' | 'absent'): { root: string; bin: string } {
  const root = mkdtempSync(join(tmpdir(), 'devexit-cli-'));
  const modules = join(root, 'node_modules', '@devexit');
  const copy = (from: string, to: string, entries: string[]) => {
    mkdirSync(to, { recursive: true });
    for (const e of entries) cpSync(join(from, e), join(to, e), { recursive: true });
  };
  copy(cliRoot, join(modules, 'cli'), ['package.json', 'dist', 'fixtures']);
  copy(resolveDir('@devexit/core'), join(modules, 'core'), ['package.json', 'dist']);
  if (native !== 'absent') {
    const nativeDir = resolveDir('@devexit/native');
    copy(nativeDir, join(modules, 'native'), ['package.json', 'dist']);
    // @devexit/native loads its addon through @devexit/backend's loader.
    const backendDir = dirname(require.resolve('@devexit/backend/package.json', { paths: [nativeDir] }));
    copy(backendDir, join(modules, 'backend'), ['package.json', 'dist']);
    if (native === 'built') {
      copy(nativeDir, join(modules, 'native'), ['build/Release/devexit_native.node']);
    }
  }
  writeFileSync(join(root, 'package.json'), '{"private":true}\n');
  return { root, bin: join(modules, 'cli', 'dist', 'bin.js') };
}

export function removeLayout(root: string): void {
  rmSync(root, { recursive: true, force: true });
}
