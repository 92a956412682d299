import { createRequire } from 'node:module';
import { dirname, isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runChild } from '@devexit/testkit';
import { expect, it } from 'vitest';

export interface OpenCloseMemoryOptions {
  /** Appears in the test name. */
  name: string;
  /** Appended to the test name when a stand-in runtime is used, e.g. 'stand-in libamdhip64'. */
  label?: string | undefined;
  /** What the child requires (a package name or an absolute path); it must export `backend`. */
  childModule: string;
  /** Extra environment for the child. */
  childEnv?: Record<string, string | undefined>;
  /** Open/queue/read/close rounds measured (default 10,000), after 2,000 unmeasured. */
  rounds?: number;
}

/** Growth allowed over the measured rounds: allocator and heap settling stay under it (about 3-4
 * MB here); a service leaked per round does not (about 2 KB a round: +21 MB over 10,000). */
export const OPEN_CLOSE_GROWTH_LIMIT = 8 * 1024 * 1024;

export const openCloseChildPath: string = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  'fixtures',
  'openCloseChild.cjs',
);

/**
 * One test: rounds of open(0) / alloc / write / read / free / close of a device, in a child
 * process, grow its RSS by less than OPEN_CLOSE_GROWTH_LIMIT (each close frees its service).
 */
export function defineOpenCloseMemory(options: OpenCloseMemoryOptions): void {
  const rounds = options.rounds ?? 10_000;
  const label = options.label ? ` (${options.label})` : '';
  const spec = options.childModule;
  const module = isAbsolute(spec) ? spec : createRequire(join(process.cwd(), 'package.json')).resolve(spec);
  it(`${options.name}: ${rounds} open/queue/read/close rounds grow RSS by less than ${OPEN_CLOSE_GROWTH_LIMIT >> 20} MB${label}`, async () => {
    const r = await runChild({
      script: openCloseChildPath,
      nodeArgs: ['--expose-gc'],
      args: [module, String(rounds)],
      env: options.childEnv ?? {},
      timeoutMs: 120_000,
    });
    expect(r.code, r.stderr).toBe(0);
    const result = JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as { growth: number };
    expect(result.growth, JSON.stringify(result)).toBeLessThan(OPEN_CLOSE_GROWTH_LIMIT);
  }, 150_000);
}
