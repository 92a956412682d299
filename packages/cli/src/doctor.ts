import { guardState } from '@devexit/native';
import { BACKEND_NAMES, loadBackend } from './backends.js';

export interface DoctorReport {
  platform: string;
  node: string;
  libc: string;
  guard: ReturnType<typeof guardState>;
  guardSupported: boolean;
  backends: Array<{
    name: string;
    available: boolean;
    reason?: string;
    devices?: number;
    versions?: Record<string, string>;
  }>;
}

function libc(): string {
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)
    ?.header;
  if (header?.glibcVersionRuntime) return `glibc ${header.glibcVersionRuntime}`;
  return process.platform === 'linux' ? 'not glibc (musl?)' : process.platform;
}

export async function doctor(): Promise<DoctorReport> {
  const libcName = libc();
  const report: DoctorReport = {
    platform: `${process.platform} ${process.arch}`,
    node: process.version,
    libc: libcName,
    guard: guardState(),
    guardSupported: libcName.startsWith('glibc'),
    backends: [],
  };
  for (const name of BACKEND_NAMES) {
    const loaded = loadBackend(name);
    if ('error' in loaded) {
      report.backends.push({ name, available: false, reason: loaded.error });
      continue;
    }
    try {
      const p = await loaded.backend.probe();
      if (p.available) {
        report.backends.push({ name, available: true, devices: p.devices, versions: p.versions });
      } else {
        const entry: DoctorReport['backends'][number] = { name, available: false, reason: p.reason };
        if (p.versions) entry.versions = p.versions;
        report.backends.push(entry);
      }
    } catch (err) {
      report.backends.push({ name, available: false, reason: `probe() threw: ${(err as Error).message}` });
    }
  }
  return report;
}

export function formatDoctor(r: DoctorReport): string {
  const g = r.guard;
  const lines = [
    'devexit doctor',
    `  platform     ${r.platform}, Node ${r.node}, ${r.libc}`,
    `  exit layers  js ${onOff(g.layers.js)}, main-thread guard ${onOff(g.layers.tls)}, atexit ${onOff(g.layers.atexit)}`,
    `  guard        ${g.tls.armed ? `armed (by ${g.tls.by})` : 'NOT armed'}${
      r.guardSupported
        ? ''
        : ' — no TLS-before-atexit guarantee on this libc: the JS and atexit layers still run'
    }`,
    `  atexit hooks ${g.atexitHooks.join(', ')}`,
    `  deadline     ${g.timeoutMs} ms, then ${g.onTimeout === 'exit' ? 'skip library teardown (_exit, code kept)' : 'warn and continue'}`,
    '  backends',
  ];
  for (const b of r.backends) {
    if (b.available) {
      const v = Object.entries(b.versions ?? {})
        .map(([k, x]) => `${k} ${x}`)
        .join(', ');
      lines.push(
        `    ${b.name.padEnd(5)} available: ${b.devices} device${b.devices === 1 ? '' : 's'}${v ? ` (${v})` : ''}`,
      );
    } else {
      lines.push(`    ${b.name.padEnd(5)} unavailable: ${b.reason}`);
    }
  }
  return lines.join('\n');
}

function onOff(b: boolean): string {
  return b ? 'on' : 'OFF';
}
