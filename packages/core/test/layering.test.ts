import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// Core is a staircase: every module imports only modules below it, type imports included.
const src = join(__dirname, '..', 'src');

function importsOf(file: string): string[] {
  const text = readFileSync(join(src, file), 'utf8');
  const out = new Set<string>();
  for (const m of text.matchAll(/(?:import|export)\s[^;]*?from\s+'\.\/([A-Za-z0-9]+)\.js'/g))
    out.add(`${m[1]}.ts`);
  for (const m of text.matchAll(/import\('\.\/([A-Za-z0-9]+)\.js'\)/g)) out.add(`${m[1]}.ts`);
  // Side-effect imports and require() make edges too.
  for (const m of text.matchAll(/import\s+'\.\/([A-Za-z0-9]+)\.js'/g)) out.add(`${m[1]}.ts`);
  for (const m of text.matchAll(/require\('\.\/([A-Za-z0-9]+)(?:\.js)?'\)/g)) out.add(`${m[1]}.ts`);
  return [...out];
}

function graphOfSrc(): Map<string, string[]> {
  const files = readdirSync(src).filter((f) => f.endsWith('.ts'));
  return new Map(files.map((f) => [f, importsOf(f)]));
}

function cycles(graph: Map<string, string[]>): string[][] {
  const files = [...graph.keys()];
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (f: string) => {
    if (state.get(f) === 'done') return;
    if (state.get(f) === 'open') {
      found.push([...stack.slice(stack.indexOf(f)), f]);
      return;
    }
    state.set(f, 'open');
    stack.push(f);
    for (const g of graph.get(f) ?? []) visit(g);
    stack.pop();
    state.set(f, 'done');
  };
  for (const f of files) visit(f);
  return found;
}

describe('core layering', () => {
  it('has no import circles (type imports count too)', () => {
    const graph = graphOfSrc();
    expect(graph.size).toBeGreaterThan(15);
    expect(cycles(graph)).toEqual([]);
  });

  it('the check finds a circle when there is one (its control), and reads type imports', () => {
    const circle = new Map([
      ['exitLayer.ts', ['signals.ts']],
      ['signals.ts', ['shutdown.ts']],
      ['shutdown.ts', ['exitLayer.ts']],
    ]);
    expect(cycles(circle)).toEqual([['exitLayer.ts', 'signals.ts', 'shutdown.ts', 'exitLayer.ts']]);
    expect(importsOf('state.ts')).toEqual(['types.ts']);
    expect(importsOf('types.ts')).toEqual([]);
  });
});
