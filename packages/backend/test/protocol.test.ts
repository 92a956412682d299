// The native protocol has one table, packages/native/include/devexit_protocol.hpp; the TypeScript
// copies of its numbers are checked against it here, by parsing the header.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BUILTIN_DEVICE_TYPES, BUILTIN_KERNEL_SIGNATURES, BUILTIN_KERNELS } from '@devexit/core';
import { describe, expect, it } from 'vitest';
import { Status } from '../src/completions.js';
import { ARG_KIND } from '../src/nativeQueue.js';

const packages = join(__dirname, '..', '..');
const header = readFileSync(join(packages, 'native', 'include', 'devexit_protocol.hpp'), 'utf8');

/** The `kName = number` entries of `enum <name> ... { ... };` in the header. */
function enumOf(name: string): Record<string, number> {
  const body = new RegExp(`enum (?:class )?${name}\\b[^{]*\\{([^}]*)\\}`).exec(header)?.[1];
  if (!body) throw new Error(`enum ${name} not found in devexit_protocol.hpp`);
  const out: Record<string, number> = {};
  for (const m of body.matchAll(/^\s*k(\w+)\s*=\s*(\d+),/gm)) out[m[1] as string] = Number(m[2]);
  return out;
}

/** PascalCase header names as the TS tables spell them: BadBuffer -> badBuffer, ArgU32 -> u32. */
const camel = (s: string) => s.charAt(0).toLowerCase() + s.slice(1);
function renamed(table: Record<string, number>, prefix = ''): Record<string, number> {
  return Object.fromEntries(Object.entries(table).map(([k, v]) => [camel(k.slice(prefix.length)), v]));
}

/** The kBuiltins rows: name, nargs, kinds, elements, one_block. */
function builtinRows() {
  const body = /kBuiltins\[\] = \{([\s\S]*?)\n\};/.exec(header)?.[1] ?? '';
  const kinds = enumOf('ArgKind');
  const value = (token: string) => {
    const t = token.trim();
    if (t === 'kElementsN') return 'n';
    if (t.startsWith('k')) return kinds[t.slice(1)];
    return Number(t);
  };
  return [...body.matchAll(/\{"(\w+)", (\d+), \{([^}]*)\}, \{([^}]*)\}, (true|false)\}/g)].map((m) => {
    const nargs = Number(m[2]);
    return {
      name: m[1],
      kinds: (m[3] as string).split(',').slice(0, nargs).map(value),
      elements: (m[4] as string).split(',').slice(0, nargs).map(value),
    };
  });
}

describe('the native protocol table (devexit_protocol.hpp) and its TypeScript copies', () => {
  it('statuses: @devexit/backend Status', () => {
    expect(renamed(enumOf('Status'))).toEqual({ ...Status });
  });

  it("argument kinds: ARG_KIND, and devexit_cpu_kernel.h's DEVEXIT_CPU_ARG_*", () => {
    const kinds = renamed(enumOf('ArgKind'), 'Arg');
    expect(kinds).toEqual({ ...ARG_KIND });
    const cpu = readFileSync(join(packages, 'cpu', 'include', 'devexit_cpu_kernel.h'), 'utf8');
    const c = Object.fromEntries(
      [...cpu.matchAll(/DEVEXIT_CPU_ARG_(\w+) = (\d+)/g)].map((m) => [
        camel((m[1] as string).toLowerCase()),
        Number(m[2]),
      ]),
    );
    expect(c).toEqual(kinds);
  });

  it("op codes: the batch encoder's OP (nativeQueue.ts)", () => {
    const source = readFileSync(join(__dirname, '..', 'src', 'nativeQueue.ts'), 'utf8');
    const op = /const OP = \{([^}]*)\}/.exec(source)?.[1] ?? '';
    const encoder = Object.fromEntries([...op.matchAll(/(\w+): (\d+)/g)].map((m) => [m[1], Number(m[2])]));
    expect(Object.keys(encoder).length).toBeGreaterThan(0);
    const ops = renamed(enumOf('QueueOp'));
    for (const [name, code] of Object.entries(encoder)) expect([name, ops[name]]).toEqual([name, code]);
  });

  it("device types: core's BUILTIN_DEVICE_TYPES and the registry's own names (registry.cc)", () => {
    const types = renamed(enumOf('DeviceType'), 'Device');
    expect(types).toEqual({ ...BUILTIN_DEVICE_TYPES });
    const registry = readFileSync(join(packages, 'native', 'addon', 'registry.cc'), 'utf8');
    const names = /r\.type_names = \{([^}]*)\}/.exec(registry)?.[1] ?? '';
    const list = [...names.matchAll(/"(\w*)"/g)].map((m) => m[1]);
    for (const [name, type] of Object.entries(types)) expect(list[type]).toBe(name);
  });

  it("built-in kernels: core's BUILTIN_KERNELS order and BUILTIN_KERNEL_SIGNATURES (kinds, elements)", () => {
    const kinds = renamed(enumOf('ArgKind'), 'Arg');
    const rows = builtinRows();
    expect(rows.map((r) => r.name)).toEqual([...BUILTIN_KERNELS]);
    for (const row of rows) {
      const sig = BUILTIN_KERNEL_SIGNATURES[row.name as keyof typeof BUILTIN_KERNEL_SIGNATURES];
      expect(row.kinds).toEqual(sig.map((p) => kinds[p.kind]));
      // Buffers: the count they must hold ('n': the last argument); scalars: none (0 in the header).
      expect(row.elements).toEqual(
        sig.map((p) => (p.kind === 'buffer' ? (p.elements === 'n' ? 'n' : p.elements) : 0)),
      );
      if (sig.some((p) => typeof p.elements === 'string')) expect(sig[sig.length - 1]?.name).toBe('n');
    }
  });
});
