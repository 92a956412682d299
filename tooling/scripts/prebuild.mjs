#!/usr/bin/env node
// Prebuilt addons, published as per-platform packages (the convention of @parcel/watcher and
// sharp): @devexit/<name>-<platform> holds the built .node and declares os/cpu/libc, and the
// main package lists it in optionalDependencies at its own version, so npm and pnpm download
// only the one that matches the machine and run no install script.
//
//   node tooling/scripts/prebuild.mjs            stage: copy each built addon into its platform
//                                                package for this machine (after `pnpm build`;
//                                                `pnpm pack` of a platform package runs it
//                                                through prepack), and check the binary
//   node tooling/scripts/prebuild.mjs --stage D  stage one platform package directory (prepack)
//   node tooling/scripts/prebuild.mjs --sync     (re)write the platform packages' package.json,
//                                                README.md and LICENSE, the main packages'
//                                                optionalDependencies, files and gypfile, and the
//                                                changesets groups that keep their versions equal
//   node tooling/scripts/prebuild.mjs --check    what --sync would change, and any package root
//                                                with a binding.gyp, as errors (CI)
//
// Adding an addon: one line in ADDONS (addons.mjs), its binding.gyp renamed to
// build-from-source.gyp, then `--sync`. Adding a platform: `built: true` in PLATFORMS, a CI
// runner of that platform that stages its binaries, then `--sync`.
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import {
  addons,
  checkBinary,
  PLATFORMS,
  platformDir,
  platformName,
  readJson,
  root,
  symbolVersions,
} from './addons.mjs';

function platformManifest(a, tag) {
  const p = PLATFORMS[tag];
  const file = `${a.addon}.node`;
  const directory = relative(root, platformDir(a, tag));
  return {
    name: platformName(a, tag),
    version: a.pkg.version,
    description: `The prebuilt ${file} of ${a.pkg.name} for ${p.text}: an optional dependency of ${a.pkg.name}, not used directly`,
    license: a.pkg.license,
    repository: { ...a.pkg.repository, directory },
    type: 'commonjs',
    os: [p.os],
    cpu: [p.cpu],
    ...(p.libc ? { libc: [p.libc] } : {}),
    files: [file, 'README.md', 'LICENSE'],
    engines: a.pkg.engines,
    scripts: {
      prepack: `node ${relative(platformDir(a, tag), join(root, 'tooling', 'scripts', 'prebuild.mjs'))} --stage .`,
    },
  };
}

function platformReadme(a, tag) {
  const p = PLATFORMS[tag];
  const needs = p.requires
    ? `Built on ${p.builtOn}; it needs glibc >= ${p.requires.GLIBC} and the libstdc++ of GCC >= 12 ` +
      `(GLIBCXX_${p.requires.GLIBCXX}). On an older system, build from source instead.\n\n`
    : '';
  return `# ${platformName(a, tag)}

The prebuilt \`${a.addon}.node\` of \`${a.pkg.name}\` for ${p.text}.

Do not install it directly: \`${a.pkg.name}\` lists it in \`optionalDependencies\` at its own
version, and its \`os\`/\`cpu\`${p.libc ? '/`libc`' : ''} fields make npm and pnpm download it only on a
matching machine. No install script runs (nothing to approve in pnpm, no compiler needed).
The loader in \`@devexit/backend\` finds it after \`${a.pkg.name}\`'s own local build, if any.

${needs}Building from source instead: \`npx devexit-build ${a.pkg.name}\` (see \`@devexit/native\`).
`;
}

/** Everything --sync writes: [file, content]. */
function syncPlan() {
  const out = [];
  const license = readFileSync(join(root, 'LICENSE'), 'utf8');
  const fixed = [];
  for (const a of addons()) {
    const main = structuredClone(a.pkg);
    const optional = {};
    for (const tag of a.platforms) {
      const dir = platformDir(a, tag);
      out.push([join(dir, 'package.json'), `${JSON.stringify(platformManifest(a, tag), null, 2)}\n`]);
      out.push([join(dir, 'README.md'), platformReadme(a, tag)]);
      out.push([join(dir, 'LICENSE'), license]);
      optional[platformName(a, tag)] = 'workspace:*';
    }
    const others = Object.fromEntries(
      Object.entries(main.optionalDependencies ?? {}).filter(([n]) => !n.startsWith(`${a.pkg.name}-`)),
    );
    main.optionalDependencies = { ...others, ...optional };
    // The gyp file is build-from-source.gyp (for devexit-build): a binding.gyp makes npm and
    // pnpm run node-gyp at install (pnpm even with "gypfile": false).
    main.files = [...new Set((main.files ?? []).filter((f) => f !== 'binding.gyp' && f !== 'install.js'))];
    if (!main.files.includes('build-from-source.gyp')) main.files.push('build-from-source.gyp');
    main.gypfile = false;
    main.scripts = { ...main.scripts };
    for (const s of ['preinstall', 'install', 'postinstall', 'prepack']) delete main.scripts[s];
    out.push([join(root, a.dir, 'package.json'), `${JSON.stringify(main, null, 2)}\n`]);
    fixed.push([a.pkg.name, ...a.platforms.map((t) => platformName(a, t))]);
  }
  const configFile = join(root, '.changeset', 'config.json');
  const config = readJson(configFile);
  const names = new Set(fixed.flat());
  config.fixed = [...(config.fixed ?? []).filter((g) => !g.some((n) => names.has(n))), ...fixed];
  out.push([configFile, `${JSON.stringify(config, null, 2)}\n`]);
  return out;
}

function sameJson(a, b) {
  try {
    return JSON.stringify(JSON.parse(a)) === JSON.stringify(JSON.parse(b));
  } catch {
    return false;
  }
}

function sync(write) {
  const changed = [];
  for (const [file, content] of syncPlan()) {
    const now = existsSync(file) ? readFileSync(file, 'utf8') : undefined;
    if (now === content) continue;
    // JSON is compared as data: biome may format it its own way.
    if (now !== undefined && file.endsWith('.json') && sameJson(now, content)) continue;
    changed.push(relative(root, file));
    if (write) {
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, content);
    }
  }
  return changed;
}

let hostTag;
function host() {
  if (!hostTag) {
    const require = createRequire(import.meta.url);
    hostTag = require(join(root, 'packages', 'backend', 'dist', 'loader.js')).platformTag();
  }
  return hostTag;
}

/** Stages one platform package directory; returns a line for the table. */
function stage(dir) {
  const at = resolve(dir);
  for (const a of addons()) {
    for (const tag of a.platforms) {
      if (at !== platformDir(a, tag)) continue;
      const file = `${a.addon}.node`;
      const built = join(root, a.dir, 'build', 'Release', file);
      const target = join(at, file);
      if (tag === host() && existsSync(built)) copyFileSync(built, target);
      else if (!existsSync(target)) {
        throw new Error(
          `no ${file} for ${tag}: ${tag === host() ? 'build it first (pnpm build)' : `this machine is ${host()}; build it on ${tag} and put it at ${target}`}`,
        );
      }
      const problem = checkBinary(target, tag);
      if (problem) throw new Error(problem);
      const needs = Object.entries(symbolVersions(readFileSync(target)))
        .map(([f, n]) => `${f}_${n}`)
        .join(', ');
      return `${platformName(a, tag)}: ${file}, ${statSync(target).size} bytes${needs ? `, needs ${needs}` : ''}`;
    }
  }
  throw new Error(`${dir} is not a platform package of ADDONS (tooling/scripts/addons.mjs)`);
}

/** Workspace package roots with a binding.gyp: npm and pnpm would run node-gyp there at install. */
function rootGypFiles() {
  const found = [];
  for (const parent of ['packages', 'tooling']) {
    for (const name of readdirSync(join(root, parent))) {
      const file = join(root, parent, name, 'binding.gyp');
      if (existsSync(file)) found.push(`${relative(root, file)}: rename it to build-from-source.gyp`);
    }
  }
  return found;
}

const args = process.argv.slice(2);
try {
  if (args[0] === '--sync' || args[0] === '--check') {
    const changed = sync(args[0] === '--sync');
    const gyp = rootGypFiles();
    if (gyp.length)
      console.error(
        `prebuild: a package root has a binding.gyp (npm and pnpm build it at install):\n  ${gyp.join('\n  ')}`,
      );
    if (args[0] === '--check' && changed.length) {
      console.error(
        `prebuild --check: out of date (run node tooling/scripts/prebuild.mjs --sync):\n  ${changed.join('\n  ')}`,
      );
    }
    if (gyp.length || (args[0] === '--check' && changed.length)) process.exit(1);
    console.log(changed.length ? `wrote ${changed.join(', ')}` : 'platform packages in sync');
  } else if (args[0] === '--stage' && args[1]) {
    console.log(`staged ${stage(args[1])}`);
  } else if (args.length === 0) {
    for (const a of addons()) {
      for (const tag of a.platforms) console.log(`staged ${stage(platformDir(a, tag))}`);
    }
  } else {
    console.error('usage: node tooling/scripts/prebuild.mjs [--sync | --check | --stage <package dir>]');
    process.exit(2);
  }
} catch (err) {
  console.error(`prebuild: ${err.message}`);
  process.exit(1);
}
