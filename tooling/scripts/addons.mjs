// The addons published prebuilt, and the platforms they are built for: the one list that
// prebuild.mjs (staging, --sync, --check), check-packages.mjs and install-test.mjs read.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Every addon that is published prebuilt: its package directory, the .node name, its platforms
 * (default: every platform in PLATFORMS). One line per addon; then `prebuild.mjs --sync`.
 */
export const ADDONS = [
  { dir: 'packages/native', addon: 'devexit_native' },
  { dir: 'packages/cpu', addon: 'devexit_cpu' },
  // ROCm ships for Linux x86_64 with glibc only.
  { dir: 'packages/hip', addon: 'devexit_hip', platforms: ['linux-x64-gnu'] },
  { dir: 'packages/cuda', addon: 'devexit_cuda', platforms: ['linux-x64-gnu', 'linux-arm64-gnu'] },
];

/**
 * The build matrix. `built`: published from CI today. The others are named (the loader already
 * computes these tags) but have no runner yet; see "Installing" in the root README.
 * `requires`: the newest symbol versions a binary may need, measured on what CI builds; staging
 * fails if a build needs more (the platform READMEs state these).
 */
export const PLATFORMS = {
  'linux-x64-gnu': {
    os: 'linux',
    cpu: 'x64',
    libc: 'glibc',
    built: true,
    machine: 62,
    requires: { GLIBC: '2.34', GLIBCXX: '3.4.30' },
    text: 'Linux x64 with glibc',
    builtOn: 'Debian 12 (glibc 2.36, GCC 12)',
  },
  'linux-arm64-gnu': {
    os: 'linux',
    cpu: 'arm64',
    libc: 'glibc',
    built: false,
    machine: 183,
    text: 'Linux arm64 with glibc',
  },
  'linux-x64-musl': {
    os: 'linux',
    cpu: 'x64',
    libc: 'musl',
    built: false,
    machine: 62,
    text: 'Linux x64 with musl',
  },
  'linux-arm64-musl': {
    os: 'linux',
    cpu: 'arm64',
    libc: 'musl',
    built: false,
    machine: 183,
    text: 'Linux arm64 with musl',
  },
  'darwin-x64': { os: 'darwin', cpu: 'x64', built: false, text: 'macOS x64' },
  'darwin-arm64': { os: 'darwin', cpu: 'arm64', built: false, text: 'macOS arm64' },
};

export const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'));

/** The addons of ADDONS, with their package.json and the platforms built today. */
export function addons() {
  return ADDONS.filter((a) => existsSync(join(root, a.dir, 'package.json'))).map((a) => {
    const pkg = readJson(join(root, a.dir, 'package.json'));
    const platforms = (a.platforms ?? Object.keys(PLATFORMS)).filter((p) => PLATFORMS[p]?.built);
    return { ...a, pkg, platforms };
  });
}

export const platformDir = (a, tag) => join(root, a.dir, 'npm', tag);
export const platformName = (a, tag) => `${a.pkg.name}-${tag}`;

/** The newest version of each symbol family an ELF binary asks for (GLIBC_2.34, GLIBCXX_3.4.30). */
export function symbolVersions(buf) {
  const text = buf.toString('latin1');
  const newest = {};
  for (const [, family, version] of text.matchAll(/\b(GLIBC|GLIBCXX)_(\d+(?:\.\d+)+)\b/g)) {
    if (!newest[family] || compareVersions(version, newest[family]) > 0) newest[family] = version;
  }
  return newest;
}

export function compareVersions(a, b) {
  const x = a.split('.').map(Number);
  const y = b.split('.').map(Number);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0);
  }
  return 0;
}

/** Why a binary does not fit a platform package, or undefined. */
export function checkBinary(file, tag) {
  const p = PLATFORMS[tag];
  const buf = readFileSync(file);
  if (p.os === 'linux') {
    if (buf.readUInt32BE(0) !== 0x7f454c46) return `${file} is not an ELF file`;
    const machine = buf.readUInt16LE(18);
    if (machine !== p.machine) return `${file} is for ELF machine ${machine}, ${tag} needs ${p.machine}`;
    if (/__asan_init|__tsan_init/.test(buf.toString('latin1'))) return `${file} is a sanitizer build`;
  }
  for (const [family, max] of Object.entries(p.requires ?? {})) {
    const needs = symbolVersions(buf)[family];
    if (needs && compareVersions(needs, max) > 0) {
      return `${file} needs ${family}_${needs}, newer than the documented ${family}_${max} (PLATFORMS in prebuild.mjs, the READMEs)`;
    }
  }
  return undefined;
}
