import type { GuardState } from '@devexit/native';
import { BACKEND_NAMES, firstLine, isNotFound, loadBackend, probeBackend } from './backends.js';

export interface BackendReport {
  name: string;
  installed: boolean;
  available: boolean;
  /** Named in DEVEXIT_REQUIRE_BACKENDS. */
  required: boolean;
  reason?: string;
  devices?: number;
  versions?: Record<string, string>;
  details?: string;
}

export type NativeReport =
  | { loaded: true; version: string; abi: number }
  | { loaded: false; installed: boolean; error: string };

export interface DoctorReport {
  cli: string;
  platform: string;
  node: string;
  libc: string;
  native: NativeReport;
  /** The exit layers, as the native registry sees them; absent when @devexit/native did not load. */
  guard?: GuardState;
  guardSupported: boolean;
  backends: BackendReport[];
  /** What is wrong, one line each; empty when nothing is. The CLI exits 1 when it is not empty. */
  problems: string[];
}

function libc(): string {
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)
    ?.header;
  if (header?.glibcVersionRuntime) return `glibc ${header.glibcVersionRuntime}`;
  return process.platform === 'linux' ? 'not glibc (musl?)' : process.platform;
}

function packageVersion(module: string): string {
  try {
    return (require(`${module}/package.json`) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

type NativeModule = typeof import('@devexit/native');

function loadNative(): { native: NativeReport; module?: NativeModule } {
  try {
    const module = require('@devexit/native') as NativeModule;
    return {
      native: { loaded: true, version: packageVersion('@devexit/native'), abi: module.abiVersion },
      module,
    };
  } catch (err) {
    if (isNotFound(err, '@devexit/native')) {
      return {
        native: { loaded: false, installed: false, error: 'not installed (npm install @devexit/native)' },
      };
    }
    // The loader's message lists what it tried and how to fix it: keep all of it, but no stack.
    const message = err instanceof Error ? err.message : String(err);
    return { native: { loaded: false, installed: true, error: message } };
  }
}

/** DEVEXIT_REQUIRE_BACKENDS: comma-separated backend names that must be available (trimmed, any case, as every DEVEXIT_* value). */
function requiredBackends(env: NodeJS.ProcessEnv): { names: string[]; unknown: string[] } {
  const names = (env.DEVEXIT_REQUIRE_BACKENDS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => {
      const lower = s.toLowerCase();
      return (BACKEND_NAMES as readonly string[]).includes(lower) ? lower : s;
    });
  return {
    names,
    unknown: names.filter((n) => !(BACKEND_NAMES as readonly string[]).includes(n)),
  };
}

export async function doctor(env: NodeJS.ProcessEnv = process.env): Promise<DoctorReport> {
  const libcName = libc();
  const problems: string[] = [];
  const { native, module } = loadNative();
  const report: DoctorReport = {
    cli: packageVersion('@devexit/cli'),
    platform: `${process.platform} ${process.arch}`,
    node: process.version,
    libc: libcName,
    native,
    guardSupported: libcName.startsWith('glibc'),
    backends: [],
    problems,
  };
  if (module) {
    try {
      report.guard = module.guardState();
    } catch (err) {
      problems.push(`@devexit/native loaded, but guardState() failed: ${firstLine(err)}`);
    }
  } else {
    problems.push(
      native.loaded
        ? '@devexit/native did not load'
        : native.installed
          ? `@devexit/native failed to load: ${native.error.split('\n')[0]}`
          : `@devexit/native is ${native.error}`,
    );
  }

  const required = requiredBackends(env);
  for (const name of required.unknown) {
    problems.push(
      `DEVEXIT_REQUIRE_BACKENDS names an unknown backend ${JSON.stringify(name.length > 80 ? `${name.slice(0, 79)}…` : name)} (known: ${BACKEND_NAMES.join(', ')})`,
    );
  }
  const nativeFirstLine = native.loaded ? undefined : native.error.split('\n')[0];
  for (const name of BACKEND_NAMES) {
    const isRequired = required.names.includes(name);
    const entry = await backendReport(name, isRequired, nativeFirstLine);
    report.backends.push(entry);
    if (isRequired && !entry.available) {
      problems.push(`${name} is required (DEVEXIT_REQUIRE_BACKENDS) but unavailable: ${entry.reason}`);
    }
  }
  return report;
}

async function backendReport(
  name: string,
  required: boolean,
  nativeFailure: string | undefined,
): Promise<BackendReport> {
  const loaded = loadBackend(name);
  if ('error' in loaded) {
    // A backend that fails only because @devexit/native does: say so once, above.
    const reason =
      nativeFailure && loaded.installed && loaded.error.includes(nativeFailure)
        ? 'failed to load: needs @devexit/native, which did not load'
        : loaded.error;
    return { name, installed: loaded.installed, available: false, required, reason };
  }
  const p = await probeBackend(loaded.backend);
  if (p.available) {
    const entry: BackendReport = {
      name,
      installed: true,
      available: true,
      required,
      devices: p.devices,
      versions: { [loaded.module]: packageVersion(loaded.module), ...p.versions },
    };
    if (p.details) entry.details = p.details;
    return entry;
  }
  const entry: BackendReport = { name, installed: true, available: false, required, reason: p.reason };
  entry.versions = { [loaded.module]: packageVersion(loaded.module), ...p.versions };
  return entry;
}

export function formatDoctor(r: DoctorReport): string {
  const lines = [
    `devexit doctor (@devexit/cli ${r.cli})`,
    `  platform     ${r.platform}, Node ${r.node}, ${r.libc}`,
  ];
  if (r.native.loaded) {
    lines.push(`  native       @devexit/native ${r.native.version} loaded (ABI ${r.native.abi})`);
  } else {
    const [first, ...more] = r.native.error.split('\n');
    lines.push(
      `  native       @devexit/native ${r.native.installed ? 'FAILED to load' : 'MISSING'}: ${first}`,
    );
    for (const m of more) lines.push(`               ${m.trim()}`);
  }
  const g = r.guard;
  if (g) {
    lines.push(
      `  exit layers  js ${onOff(g.layers.js)}, main-thread guard ${onOff(g.layers.tls)}, atexit ${onOff(g.layers.atexit)}`,
      `  guard        ${g.tls.armed ? `armed (by ${g.tls.by})` : 'NOT armed'}${
        r.guardSupported
          ? ''
          : ' — no TLS-before-atexit guarantee on this libc: the JS and atexit layers still run'
      }`,
      `  atexit hooks ${g.atexitHooks.join(', ')}`,
      `  deadline     ${g.timeoutMs} ms, then ${g.onTimeout === 'exit' ? 'skip library teardown (_exit, code kept)' : 'warn and continue'}`,
    );
  } else {
    lines.push('  exit layers  unknown: @devexit/native did not load, so no exit layer is armed');
  }
  lines.push('  backends');
  for (const b of r.backends) {
    const req = b.required ? ' [required]' : '';
    const v = Object.entries(b.versions ?? {})
      .map(([k, x]) => `${k} ${x}`)
      .join(', ');
    if (b.available) {
      lines.push(
        `    ${b.name.padEnd(5)} available: ${b.devices} device${b.devices === 1 ? '' : 's'}${v ? ` (${v})` : ''}${req}`,
      );
      if (b.details) lines.push(`          ${b.details}`);
    } else if (!b.installed) {
      lines.push(`    ${b.name.padEnd(5)} ${b.reason}${req}`);
    } else {
      lines.push(`    ${b.name.padEnd(5)} unavailable: ${b.reason}${v ? ` (${v})` : ''}${req}`);
    }
  }
  if (r.problems.length) {
    lines.push('  problems');
    for (const p of r.problems) lines.push(`    - ${p}`);
  } else {
    lines.push('  no problems found');
  }
  return lines.join('\n');
}

function onOff(b: boolean): string {
  return b ? 'on' : 'OFF';
}
