// The README checker itself, on a README of its own: what runs, what is type-checked, what is
// skipped, and that a failing program or a type error fails with the README's line.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkBlocks, extractBlocks, planOf } from '../readme-blocks.mjs';

const dir = mkdtempSync(join(tmpdir(), 'devexit-readme-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const F = '```';

describe('readme-blocks', () => {
  it('plans each block from its language and info string', () => {
    const plan = (lang, ...words) => planOf({ lang, words });
    expect(plan('js')).toEqual({ action: 'run', ext: '.cjs', node: 0 });
    expect(plan('js', 'esm')).toEqual({ action: 'run', ext: '.mjs', node: 0 });
    expect(plan('mjs', 'node>=24')).toEqual({ action: 'run', ext: '.mjs', node: 24 });
    expect(plan('js', 'check')).toEqual({ action: 'check', ext: '.cjs' });
    expect(plan('ts')).toEqual({ action: 'check', ext: '.mts' });
    expect(plan('typescript', 'fragment')).toEqual({ action: 'skip' });
    expect(plan('sh')).toBeUndefined();
    expect(plan('js', 'runn')).toEqual({ action: 'error', why: 'unknown word(s) in the info string: runn' });
  });

  it('extracts fenced blocks with their line, language and words', () => {
    const blocks = extractBlocks(
      'x.md',
      `# t\n\n${F}js esm node>=24\nawait 1;\n${F}\n\n~~~ts\nlet a = 1;\n~~~\n`,
    );
    expect(blocks).toEqual([
      { file: 'x.md', line: 3, lang: 'js', words: ['esm', 'node>=24'], code: 'await 1;' },
      { file: 'x.md', line: 7, lang: 'ts', words: [], code: 'let a = 1;' },
    ]);
  });

  it('runs programs, type-checks TypeScript, skips fragments; failures name the README line', () => {
    const readme = join(dir, 'README.md');
    writeFileSync(
      readme,
      [
        '# A README',
        `${F}js`,
        "console.log('ran');",
        F,
        `${F}js esm`,
        "import { setTimeout } from 'node:timers/promises';",
        'await setTimeout(1);',
        F,
        `${F}js`,
        "throw new Error('boom');",
        F,
        `${F}js fragment`,
        'notDefinedAnywhere();',
        F,
        `${F}ts`,
        "const n: number = 'not a number';",
        'export { n };',
        F,
        `${F}ts`,
        "import { availableParallelism } from 'node:os';",
        'const cores: number = availableParallelism();',
        'export { cores };',
        F,
      ].join('\n'),
    );
    const results = checkBlocks([readme]);
    expect(results.map((r) => [r.line, r.action, r.ok])).toEqual([
      [2, 'run', true],
      [5, 'run', true],
      [9, 'run', false],
      [12, 'skip', true],
      [15, 'check', false],
      [19, 'check', true],
    ]);
    expect(results[0].output).toContain('ran');
    expect(results[2].output).toContain('Error: boom');
    expect(results[4].detail).toMatch(
      /README\.md:16:7: error TS2322: Type 'string' is not assignable to type 'number'/,
    );
  });
});
