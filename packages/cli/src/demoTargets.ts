import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { firstLine, loadBackend, probeBackend } from './backends.js';

const FIXTURES = join(__dirname, '..', 'fixtures');

/**
 * What one demo row group runs: a child program on a backend, with the environment that picks
 * its runtime. `runtime` names that runtime in every row ("hip · real ROCm 5.2",
 * "cuda · stand-in libcuda"); `about` says in a sentence what the child does and why it can crash.
 */
export interface DemoTarget {
  backend: string;
  runtime: string;
  standIn: boolean;
  about: string;
  script: string;
  /** The child's arguments before the exit path. */
  args: string[];
  env: Record<string, string>;
  /** A race: its unguarded runs are expected to crash (at least one, across its paths). */
  race: boolean;
}

export interface Skip {
  backend: string;
  reason: string;
}

/**
 * Glibc's malloc without its caches checks the heap at every free: ROCm's teardown racing a
 * running thread then aborts instead of corrupting the heap unseen (the hip test suite's setting).
 */
const MALLOC_CHECKS = 'glibc.malloc.mxfast=0:glibc.malloc.tcache_count=0';

/**
 * A stand-in vendor library (a test double from the repository's tooling/standins-hip and
 * standins-cuda): only there in the repository, never a dependency of this package.
 */
function standIn(name: 'hip' | 'cuda'): string | undefined {
  const module = `@devexit/standins-${name}`;
  try {
    const exports = require(module) as Record<string, unknown>;
    const path = exports[name === 'hip' ? 'standinHipPath' : 'standinCudaPath'];
    return typeof path === 'string' && existsSync(path) ? path : undefined;
  } catch {
    return undefined;
  }
}

const short = (version: string) => version.split('.').slice(0, 2).join('.');

/** hip: the real libamdhip64 when it loads here (no GPU needed), else the stand-in. */
async function hipTarget(): Promise<DemoTarget | Skip> {
  const loaded = loadBackend('hip');
  if ('error' in loaded) return { backend: 'hip', reason: loaded.error };
  const probe = await probeBackend(loaded.backend);
  const runtime = probe.versions?.runtime;
  const common = { backend: 'hip', script: join(FIXTURES, 'raceChild.cjs'), race: true };
  if (runtime) {
    return {
      ...common,
      runtime: `hip · real ROCm ${short(runtime)}`,
      standIn: false,
      about: `${probe.versions?.library ?? 'libamdhip64'} ${runtime}: devexit's hiprtc compiler thread calls HIP (hipGetDeviceCount) while the process exits; no GPU is needed. glibc's malloc checks are on (GLIBC_TUNABLES) so that a heap ROCm's teardown corrupts aborts instead of passing unseen.`,
      args: [loaded.path, 'hip'],
      env: { GLIBC_TUNABLES: MALLOC_CHECKS },
    };
  }
  const library = standIn('hip');
  if (!library)
    return {
      backend: 'hip',
      reason: `no libamdhip64 here (${firstLine(probe.available ? '' : probe.reason)}) and no stand-in`,
    };
  return {
    ...common,
    runtime: 'hip · stand-in libamdhip64',
    standIn: true,
    about: `no ROCm here: a stand-in libamdhip64 (a test double from tooling/standins-hip) whose exit teardown, registered lazily as ROCm's is, poisons its state; devexit's compiler thread calls it (hipGetDeviceCount) while the process exits.`,
    args: [loaded.path, 'hip'],
    env: { DEVEXIT_HIP_LIBRARY: library },
  };
}

/** cuda: the real NVRTC when it is here (no GPU, no libcuda needed), else the stand-in libcuda. */
async function cudaTarget(): Promise<DemoTarget | Skip> {
  const loaded = loadBackend('cuda');
  if ('error' in loaded) return { backend: 'cuda', reason: loaded.error };
  const probe = await probeBackend(loaded.backend);
  const nvrtc = probe.versions?.nvrtc;
  const common = { backend: 'cuda', script: join(FIXTURES, 'raceChild.cjs'), race: true };
  if (nvrtc && nvrtc !== 'missing') {
    const version = /\(([\d.]+)\)/.exec(nvrtc)?.[1];
    return {
      ...common,
      runtime: `cuda · real NVRTC ${version ?? ''}`.trimEnd(),
      standIn: false,
      about: `${nvrtc}: devexit's compiler thread compiles with NVRTC (and a compile of the program's is pending) while the process exits; NVRTC's exit handlers unload what the compile uses. No GPU or libcuda is needed (the children load none).`,
      args: [loaded.path, 'nvrtc'],
      // The compiler service needs no driver: without one, a child starts 50-80 ms sooner.
      env: { DEVEXIT_CUDA_LIBRARY: '/nonexistent/devexit-demo/libcuda.so.1' },
    };
  }
  const library = standIn('cuda');
  if (!library) return { backend: 'cuda', reason: 'no NVRTC here and no stand-in libcuda' };
  return {
    ...common,
    runtime: 'cuda · stand-in libcuda',
    standIn: true,
    about: `no NVRTC here: a stand-in libcuda.so.1 (a test double from tooling/standins-cuda) whose exit teardown, registered lazily at cuInit, poisons its state (DEVEXIT_STANDIN_CUDA_TEARDOWN=crash); devexit's compiler thread calls it (cuDeviceGetCount) while the process exits.`,
    args: [loaded.path, 'driver'],
    env: { DEVEXIT_CUDA_LIBRARY: library, DEVEXIT_STANDIN_CUDA_TEARDOWN: 'crash' },
  };
}

/** cpu and wgpu: the real backend's queue kept busy; their runtimes have no teardown to trip over. */
async function queueTarget(name: string): Promise<DemoTarget | Skip> {
  const loaded = loadBackend(name);
  if ('error' in loaded) return { backend: name, reason: loaded.error };
  const probe = await probeBackend(loaded.backend);
  if (!probe.available) return { backend: name, reason: `unavailable: ${probe.reason}` };
  return {
    backend: name,
    runtime: `${name} · real`,
    standIn: false,
    about: `device 0's queue kept busy (launches queued, a flush pending); ${name}'s runtime has no exit teardown that a running thread trips over on these paths, so both columns end cleanly: the closes devexit ran are the difference.`,
    script: join(FIXTURES, 'demoChild.cjs'),
    args: [loaded.path],
    env: {},
    race: false,
  };
}

/** The demo's targets: the named backends, or by default the exit races (hip, cuda). */
export async function demoTargets(names: readonly string[]): Promise<Array<DemoTarget | Skip>> {
  const out: Array<DemoTarget | Skip> = [];
  for (const name of names) {
    out.push(
      name === 'hip' ? await hipTarget() : name === 'cuda' ? await cudaTarget() : await queueTarget(name),
    );
  }
  return out;
}
