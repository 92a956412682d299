/**
 * Sizes of WGSL storage types (WGSL's memory layout rules), so a launch can refuse a buffer that
 * is smaller than its binding needs before Dawn sees it: Dawn would reject the dispatch and with
 * it every command of the batch. Types it cannot size (override-sized arrays, unknown names)
 * give undefined, and the launch is not checked for them.
 */

interface Layout {
  size: number;
  align: number;
}

/** Declarations a type may name: structs and aliases, by name, as their source text. */
export interface Declarations {
  structs: Map<string, string>;
  aliases: Map<string, string>;
}

const roundUp = (align: number, n: number) => Math.ceil(n / align) * align;

const SCALARS: Record<string, Layout> = {
  u32: { size: 4, align: 4 },
  i32: { size: 4, align: 4 },
  f32: { size: 4, align: 4 },
  f16: { size: 2, align: 2 },
};

/** Struct and alias declarations of a WGSL text (comments already removed). */
export function structSizes(code: string): Declarations {
  const structs = new Map<string, string>();
  for (const m of code.matchAll(/\bstruct\s+([A-Za-z_]\w*)\s*\{([^}]*)\}/g))
    structs.set(m[1] ?? '', m[2] ?? '');
  const aliases = new Map<string, string>();
  for (const m of code.matchAll(/\balias\s+([A-Za-z_]\w*)\s*=\s*([^;]+);/g))
    aliases.set(m[1] ?? '', (m[2] ?? '').trim());
  return { structs, aliases };
}

/** Splits `a, b<c, d>, e` at top-level commas. */
function splitTop(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '<') depth++;
    else if (c === '>') depth--;
    else if (c === ',' && depth === 0) {
      out.push(s.slice(start, i).trim());
      start = i + 1;
    }
  }
  const last = s.slice(start).trim();
  if (last) out.push(last);
  return out;
}

function vector(n: number, of: Layout): Layout {
  return { size: n * of.size, align: (n === 2 ? 2 : 4) * of.align };
}

const SHORT_ELEMENT: Record<string, string> = { f: 'f32', i: 'i32', u: 'u32', h: 'f16' };

function layout(type: string, decls: Declarations, seen: Set<string>): Layout | undefined {
  const t = type.trim();
  const m = /^([A-Za-z_]\w*)\s*(?:<([\s\S]*)>)?$/.exec(t);
  if (!m) return undefined;
  const name = m[1] ?? '';
  const args = m[2] === undefined ? [] : splitTop(m[2]);
  const scalar = SCALARS[name];
  if (scalar) return scalar;
  if (name === 'atomic') return { size: 4, align: 4 };
  let v = /^vec([234])([fiuh])?$/.exec(name);
  if (v) {
    const of = v[2] ? SCALARS[SHORT_ELEMENT[v[2]] ?? ''] : args[0] && layout(args[0], decls, seen);
    return of ? vector(Number(v[1]), of) : undefined;
  }
  v = /^mat([234])x([234])([fh])?$/.exec(name);
  if (v) {
    const of = v[3] ? SCALARS[SHORT_ELEMENT[v[3]] ?? ''] : args[0] && layout(args[0], decls, seen);
    if (!of) return undefined;
    const column = vector(Number(v[2]), of);
    return { size: Number(v[1]) * roundUp(column.align, column.size), align: column.align };
  }
  if (name === 'array') {
    const element = args[0] === undefined ? undefined : layout(args[0], decls, seen);
    if (!element) return undefined;
    const stride = roundUp(element.align, element.size);
    if (args.length < 2) return { size: stride, align: element.align }; // runtime-sized: one element
    const count = /^(\d+)[iu]?$/.exec(args[1] ?? '');
    return count ? { size: Number(count[1]) * stride, align: element.align } : undefined;
  }
  if (seen.has(name)) return undefined;
  const alias = decls.aliases.get(name);
  if (alias !== undefined) return layout(alias, decls, new Set([...seen, name]));
  const body = decls.structs.get(name);
  return body === undefined ? undefined : struct(body, decls, new Set([...seen, name]));
}

function struct(body: string, decls: Declarations, seen: Set<string>): Layout | undefined {
  let end = 0;
  let align = 1;
  for (const member of splitTop(body.replace(/;/g, ','))) {
    const m = /^((?:@\w+\s*(?:\([^)]*\))?\s*)*)[A-Za-z_]\w*\s*:\s*([\s\S]+)$/.exec(member);
    if (!m) return undefined;
    const type = layout(m[2] ?? '', decls, seen);
    if (!type) return undefined;
    const attrs = m[1] ?? '';
    const a = /@align\s*\(\s*(\d+)\s*\)/.exec(attrs);
    const s = /@size\s*\(\s*(\d+)\s*\)/.exec(attrs);
    const memberAlign = a ? Number(a[1]) : type.align;
    end = roundUp(memberAlign, end) + (s ? Number(s[1]) : type.size);
    align = Math.max(align, memberAlign);
  }
  return { size: roundUp(align, end), align };
}

/** The smallest buffer a `var<storage>` of this type accepts, or undefined when unknown. */
export function minBindingSize(type: string, decls: Declarations): number | undefined {
  return layout(type, decls, new Set())?.size;
}
