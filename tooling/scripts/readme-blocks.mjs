#!/usr/bin/env node
// Every JavaScript and TypeScript block of the READMEs (the root's and packages/*'s), run or
// type-checked against the workspace's packages (built): `node tooling/scripts/readme-blocks.mjs`.
//
// What a block's info string asks (after the language):
//   ```js / ```cjs               run with Node as CommonJS (a .cjs file)
//   ```js esm / ```mjs           run with Node as an ES module (a .mjs file)
//   ```js node>=24               run with a Node of at least that version: this one, else
//                                DEVEXIT_README_NODE24 (a path), else the binary
//                                tooling/scripts/node-versions.mjs keeps; type-checked when none
//   ```js check                  type-checked (// @ts-check), not run (needs a GPU, a signal, ...)
//   ```ts / ```typescript        type-checked as an ES module (.mts), strict, skipLibCheck off
//   ```<lang> fragment           neither: a piece of a program, not one (named in the summary)
// A run passes when the program exits 0 within 2 minutes. Each block runs in a folder whose
// node_modules/@devexit/* are the workspace's packages.
//
//   node tooling/scripts/readme-blocks.mjs [--json] [README.md ...]
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const JS = new Set(['js', 'javascript', 'cjs', 'mjs']);
const TS = new Set(['ts', 'typescript', 'mts', 'cts']);
const WORDS = new Set(['fragment', 'check', 'esm']);
const RUN_TIMEOUT_MS = 120_000;

/** The fenced blocks of a markdown file: { file, line, lang, words, code }. */
export function extractBlocks(file, text) {
  const blocks = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^ {0,3}(`{3,}|~{3,})\s*([^\s`~]*)\s*(.*)$/.exec(lines[i]);
    if (!open) continue;
    const [, fence, lang, rest] = open;
    const body = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      if (new RegExp(`^ {0,3}${fence[0]}{${fence.length},}\\s*$`).test(lines[j])) break;
      body.push(lines[j]);
    }
    blocks.push({
      file,
      line: i + 1,
      lang: lang.toLowerCase(),
      words: rest.split(/\s+/).filter(Boolean),
      code: body.join('\n'),
    });
    i = j;
  }
  return blocks;
}

/** What the checker does with a block: run, check, skip; or undefined for another language. */
export function planOf(block) {
  const lang = block.lang;
  if (!JS.has(lang) && !TS.has(lang)) return undefined;
  const unknown = block.words.filter((w) => !WORDS.has(w) && !/^node>=\d+$/.test(w));
  if (unknown.length)
    return { action: 'error', why: `unknown word(s) in the info string: ${unknown.join(' ')}` };
  if (block.words.includes('fragment')) return { action: 'skip' };
  const node = Number(/^node>=(\d+)$/.exec(block.words.find((w) => w.startsWith('node>=')) ?? '')?.[1] ?? 0);
  if (TS.has(lang)) return { action: 'check', ext: lang === 'cts' ? '.cts' : '.mts' };
  const ext = lang === 'mjs' || block.words.includes('esm') ? '.mjs' : '.cjs';
  if (block.words.includes('check')) return { action: 'check', ext };
  return { action: 'run', ext, node };
}

/** The READMEs: the root's and each package's. */
export function readmes() {
  const files = [join(root, 'README.md')];
  for (const name of readdirSync(join(root, 'packages')).sort()) {
    const f = join(root, 'packages', name, 'README.md');
    if (existsSync(f)) files.push(f);
  }
  return files;
}

/** A folder where `@devexit/<name>` is the workspace's package, and `@types/node` resolves. */
function project() {
  const dir = mkdtempSync(join(tmpdir(), 'devexit-readme-'));
  const scope = join(dir, 'node_modules', '@devexit');
  mkdirSync(scope, { recursive: true });
  for (const parent of ['packages', 'tooling']) {
    for (const name of readdirSync(join(root, parent))) {
      const manifest = join(root, parent, name, 'package.json');
      if (!existsSync(manifest)) continue;
      const pkg = JSON.parse(readFileSync(manifest, 'utf8'));
      if (pkg.name?.startsWith('@devexit/'))
        symlinkSync(join(root, parent, name), join(scope, pkg.name.slice(9)));
    }
  }
  const fromCore = createRequire(join(root, 'packages', 'core', 'package.json'));
  mkdirSync(join(dir, 'node_modules', '@types'), { recursive: true });
  symlinkSync(
    dirname(fromCore.resolve('@types/node/package.json')),
    join(dir, 'node_modules', '@types', 'node'),
  );
  writeFileSync(join(dir, 'package.json'), '{ "private": true }\n');
  return dir;
}

/** A Node of at least `major`: this one, DEVEXIT_README_NODE<major>, or node-versions' cached one. */
function nodeAtLeast(major) {
  if (Number(process.versions.node.split('.')[0]) >= major) return process.execPath;
  const given = process.env[`DEVEXIT_README_NODE${major}`];
  if (given && existsSync(given)) return given;
  const cache = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'devexit-node-versions');
  if (!existsSync(cache)) return undefined;
  const found = readdirSync(cache)
    .map((d) => /^node-(\d+)\./.exec(d))
    .filter((m) => m && Number(m[1]) >= major)
    .map((m) => join(cache, m.input, 'bin', 'node'))
    .find((f) => existsSync(f));
  return found;
}

export function checkBlocks(files, { log = () => {} } = {}) {
  const dir = project();
  const results = [];
  const toCheck = [];
  try {
    let n = 0;
    for (const file of files) {
      for (const block of extractBlocks(file, readFileSync(file, 'utf8'))) {
        const plan = planOf(block);
        if (!plan) continue;
        const where = `${relative(root, file)}:${block.line}`;
        const result = {
          where,
          file: relative(root, file),
          line: block.line,
          lang: block.lang,
          words: block.words,
        };
        results.push(result);
        if (plan.action === 'error') Object.assign(result, { action: 'error', ok: false, detail: plan.why });
        else if (plan.action === 'skip') Object.assign(result, { action: 'skip', ok: true });
        else {
          const name = `block${++n}${plan.ext}`;
          let action = plan.action;
          let node;
          if (action === 'run' && plan.node) {
            node = nodeAtLeast(plan.node);
            if (!node) {
              action = 'check';
              result.detail = `no Node >= ${plan.node} here: type-checked instead`;
            }
          }
          if (action === 'check') {
            writeFileSync(
              join(dir, name),
              `${plan.ext.endsWith('js') ? '// @ts-check\n' : ''}${block.code}\n`,
            );
            toCheck.push({ name, result, offset: plan.ext.endsWith('js') ? 1 : 0 });
            Object.assign(result, { action: 'check' });
            continue;
          }
          writeFileSync(join(dir, name), `${block.code}\n`);
          const env = { ...process.env };
          delete env.NODE_OPTIONS;
          const started = Date.now();
          const r = spawnSync(node ?? process.execPath, [name], {
            cwd: dir,
            env,
            encoding: 'utf8',
            timeout: RUN_TIMEOUT_MS,
          });
          const version = spawnSync(node ?? process.execPath, ['--version'], {
            encoding: 'utf8',
          }).stdout.trim();
          Object.assign(result, {
            action: 'run',
            node: version,
            ok: r.status === 0,
            ms: Date.now() - started,
            output: `${r.stdout}${r.stderr}`.slice(-3000),
          });
          if (r.status !== 0)
            result.detail = `exit ${r.status ?? r.signal}${r.error ? ` (${r.error.message})` : ''}`;
          log(result);
        }
      }
    }
    if (toCheck.length) {
      const tsconfig = {
        compilerOptions: {
          strict: true,
          skipLibCheck: false,
          target: 'es2022',
          lib: ['es2022', 'esnext.disposable'],
          module: 'nodenext',
          moduleResolution: 'nodenext',
          types: ['node'],
          allowJs: true,
          noEmit: true,
        },
        files: toCheck.map((c) => c.name),
      };
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(tsconfig, null, 2));
      const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
      const r = spawnSync(process.execPath, [tsc, '-p', '.', '--pretty', 'false'], {
        cwd: dir,
        encoding: 'utf8',
      });
      const out = `${r.stdout}${r.stderr}`;
      for (const c of toCheck) {
        // Errors name the block's file and a line in it: back to the README's line.
        const errors = out
          .split('\n')
          .filter((l) => l.startsWith(`${c.name}(`))
          .map((l) =>
            l.replace(
              /^[^(]+\((\d+),(\d+)\)/,
              (_, line, col) =>
                `${c.result.where.split(':')[0]}:${c.result.line + Number(line) - c.offset}:${col}`,
            ),
          );
        c.result.ok = errors.length === 0;
        if (errors.length) c.result.detail = errors.join('\n');
        log(c.result);
      }
      // An error outside the blocks (a config problem) fails them all.
      if (r.status !== 0 && !toCheck.some((c) => c.result.detail)) {
        for (const c of toCheck) Object.assign(c.result, { ok: false, detail: out.slice(-3000) });
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  // The root README's first program is the one a new user copies: it must run, not be checked.
  const first = results.find((r) => r.file === 'README.md' && JS.has(r.lang));
  if (first && first.action !== 'run') {
    first.ok = false;
    first.detail = `the root README's first program must be run (it is ${first.action === 'skip' ? 'a fragment' : 'only type-checked'})`;
  }
  return results;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values, positionals } = parseArgs({
    options: { json: { type: 'boolean' } },
    allowPositionals: true,
  });
  const files = positionals.length ? positionals.map((f) => resolve(f)) : readmes();
  const show = (r) => {
    if (values.json) return;
    const what =
      r.action === 'run'
        ? `ran with Node ${r.node} (${(r.ms / 1000).toFixed(1)} s)`
        : r.action === 'check'
          ? 'type-checked'
          : r.action;
    console.log(
      `${r.ok ? 'ok  ' : 'FAIL'} ${r.where} ${[r.lang, ...r.words].join(' ')}: ${what}${r.detail && r.ok ? ` (${r.detail})` : ''}`,
    );
    if (!r.ok) console.log(`${r.detail ?? ''}\n${r.output ?? ''}`.trim().replace(/^/gm, '    '));
  };
  const results = checkBlocks(files, { log: show });
  for (const r of results) if (r.action === 'skip' || r.action === 'error') show(r);
  const count = (a) => results.filter((r) => r.action === a).length;
  const failed = results.filter((r) => !r.ok).length;
  if (values.json) console.log(JSON.stringify(results, null, 2));
  else
    console.log(
      `readme-blocks: ${results.length} blocks in ${files.length} READMEs: ${count('run')} run, ${count('check')} type-checked, ${count('skip')} fragments; ${failed ? `${failed} FAILED` : 'all ok'}`,
    );
  process.exitCode = failed ? 1 : 0;
}
