/** Loading Dawn (npm `webgpu`), keeping its instances alive, and finding an adapter. */

import { isMainThread } from 'node:worker_threads';
import { envChoice } from '@devexit/core';
import type { GPU, GPUAdapter } from './gpuTypes.js';

export interface DawnModule {
  create(flags: string[]): GPU;
  globals: Record<string, unknown>;
}

export interface AdapterChoice {
  /** The instance it came from: a device consumes its adapter, so a reopen asks it again. */
  gpu: GPU;
  adapter: GPUAdapter;
  /** 'vulkan' or 'opengles' (or whatever DEVEXIT_WGPU_FLAGS asked for). */
  backend: string;
  flags: string[];
  featureLevel: 'core' | 'compatibility';
  description: string;
}

export interface Discovery {
  choice: AdapterChoice | undefined;
  /** The backend, feature level and platform picked, for probe()'s details. */
  summary: string;
  /** One line per attempt, for probe(). */
  tried: string[];
  version: string;
}

// Dawn crashes in CallbackTaskManager::Flush when the object from create() is collected while a
// device made from it lives on: every instance we create stays reachable for the process's life.
const KEEP = Symbol.for('@devexit/wgpu/instances');
const g = globalThis as unknown as Record<symbol, unknown[] | undefined>;
const instances: unknown[] = g[KEEP] ?? [];
if (!g[KEEP]) Object.defineProperty(globalThis, KEEP, { value: instances, enumerable: false });

let dawn: DawnModule | undefined;
let dawnError: string | undefined;
let dawnVersion = 'unknown';

/** The `webgpu` module, or undefined with a reason (never throws). */
export function loadDawn(): { dawn?: DawnModule; error?: string } {
  if (dawn) return { dawn };
  if (dawnError !== undefined) return { error: dawnError };
  try {
    // webgpu is ESM; Node >= 20.19 loads it through require(esm).
    const mod = require('webgpu') as DawnModule;
    if (typeof mod.create !== 'function') throw new Error('the module has no create()');
    // The WebGPU constants (GPUBufferUsage, GPUMapMode, ...) and classes, as in a browser.
    for (const [k, v] of Object.entries(mod.globals)) {
      if (!(k in globalThis)) (globalThis as Record<string, unknown>)[k] = v;
    }
    try {
      dawnVersion = (require('webgpu/package.json') as { version: string }).version;
    } catch {
      // The exports map may hide package.json; the version is informational.
    }
    dawn = mod;
    return { dawn };
  } catch (err) {
    dawnError = `cannot load npm 'webgpu' (Dawn): ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`;
    return { error: dawnError };
  }
}

function keep(instance: unknown): void {
  instances.push(instance);
}

interface Attempt {
  backend: string;
  flags: string[];
  featureLevel: 'core' | 'compatibility';
}

/** Dawn backends that compute: `null` is Dawn's test backend, which runs nothing and reads garbage. */
const DAWN_BACKENDS = ['vulkan', 'opengles', 'opengl', 'metal', 'd3d12', 'd3d11'] as const;

/** A user's value in a message: cut to about 80 characters. */
function shown(value: string): string {
  return JSON.stringify(value.length > 80 ? `${value.slice(0, 79)}\u2026` : value);
}

/**
 * What to try, with core's settings grammar: values trimmed, a bad DEVEXIT_WGPU_BACKEND or
 * DEVEXIT_WGPU_FEATURE_LEVEL warned about (naming it) and the default kept. A DEVEXIT_WGPU_FLAGS
 * that names no computing backend is refused: `refused` says why, and wgpu reports unavailable.
 */
function attempts(env: NodeJS.ProcessEnv): { list: Attempt[]; refused?: string } {
  const custom = env.DEVEXIT_WGPU_FLAGS;
  if (custom !== undefined && custom.trim() !== '') {
    const flags = custom
      .split(',')
      .map((f) => f.trim())
      .filter(Boolean);
    const named = flags.find((f) => f.startsWith('backend='))?.slice('backend='.length);
    if (named !== undefined && !(DAWN_BACKENDS as readonly string[]).includes(named)) {
      return {
        list: [],
        refused: `DEVEXIT_WGPU_FLAGS=${shown(custom)}: backend=${shown(named).slice(1, -1)} is not a Dawn backend that computes (${DAWN_BACKENDS.join(', ')})`,
      };
    }
    const featureLevel = envChoice(
      'DEVEXIT_WGPU_FEATURE_LEVEL',
      ['core', 'compatibility'] as const,
      'core',
      env,
    );
    return { list: [{ backend: named ?? 'default', flags, featureLevel: featureLevel ?? 'core' }] };
  }
  const vulkan: Attempt = { backend: 'vulkan', flags: ['backend=vulkan'], featureLevel: 'core' };
  const gles: Attempt = { backend: 'opengles', flags: ['backend=opengles'], featureLevel: 'compatibility' };
  if (env.DEVEXIT_WGPU_FEATURE_LEVEL !== undefined) {
    // Read for its warning only: without DEVEXIT_WGPU_FLAGS each backend has its own level.
    envChoice('DEVEXIT_WGPU_FEATURE_LEVEL', ['core', 'compatibility'] as const, 'core', env);
  }
  switch (envChoice('DEVEXIT_WGPU_BACKEND', ['vulkan', 'opengles'] as const, undefined, env)) {
    case 'vulkan':
      return { list: [vulkan] };
    case 'opengles':
      return { list: [gles] };
    default:
      return { list: [vulkan, gles] };
  }
}

function describeVulkan(env: NodeJS.ProcessEnv): string {
  const icd = env.VK_ICD_FILENAMES ?? env.VK_DRIVER_FILES;
  return icd ? `VK_ICD_FILENAMES=${icd}` : 'the Vulkan loader default ICDs (/usr/share/vulkan/icd.d)';
}

const headless = (env: NodeJS.ProcessEnv) => !env.DISPLAY && !env.WAYLAND_DISPLAY;

// Mesa's EGL reads EGL_PLATFORM with getenv() and, on a machine without a display, finds no
// platform unless it is told "surfaceless". Only the main thread can tell it: a Worker's
// process.env is a copy (unless the Worker was made with SHARE_ENV), and writing it changes
// nothing EGL sees.
const EGL_FROM_WORKER =
  'a Worker cannot set EGL_PLATFORM for EGL (its process.env is a copy): start node with ' +
  'EGL_PLATFORM=surfaceless, or load @devexit/wgpu on the main thread first (it sets it there; ' +
  '`node -r @devexit/wgpu/register`)';

/**
 * On the main thread of a headless machine, sets EGL_PLATFORM=surfaceless unless it is set, so that
 * Dawn's OpenGL ES backend finds Mesa's EGL in this thread and in every Worker started later.
 */
export function presetEglPlatform(env: NodeJS.ProcessEnv = process.env): void {
  if (isMainThread && env.EGL_PLATFORM === undefined && headless(env)) env.EGL_PLATFORM = 'surfaceless';
}

/**
 * Tries Vulkan, then Dawn's OpenGL ES backend (feature level compatibility, EGL surfaceless),
 * unless DEVEXIT_WGPU_BACKEND or DEVEXIT_WGPU_FLAGS pick one. Never throws.
 */
export async function discover(env: NodeJS.ProcessEnv = process.env): Promise<Discovery> {
  const loaded = loadDawn();
  if (!loaded.dawn)
    return {
      choice: undefined,
      summary: 'no adapter',
      tried: [loaded.error ?? 'webgpu failed to load'],
      version: dawnVersion,
    };
  const tried: string[] = [];
  const plan = attempts(env);
  if (plan.refused) tried.push(plan.refused);
  for (const a of plan.list) {
    // Set before the attempt, for this thread; a Worker's write is only noted (see above).
    const eglUnsetInWorker = a.backend === 'opengles' && !isMainThread && env.EGL_PLATFORM === undefined;
    if (a.backend === 'opengles' && env.EGL_PLATFORM === undefined && isMainThread) {
      env.EGL_PLATFORM = 'surfaceless';
    }
    const where =
      a.backend === 'vulkan'
        ? `Vulkan (${describeVulkan(env)})`
        : a.backend === 'opengles'
          ? `OpenGL ES (EGL_PLATFORM=${env.EGL_PLATFORM ?? 'unset'}${isMainThread ? '' : ' in a Worker'}, featureLevel compatibility)`
          : `Dawn flags ${shown(a.flags.join(',')).slice(1, -1)}`;
    try {
      const gpu = loaded.dawn.create(a.flags);
      keep(gpu);
      const adapter = await gpu.requestAdapter({ featureLevel: a.featureLevel } as GPURequestAdapterOptions);
      if (!adapter) {
        const hint = eglUnsetInWorker && headless(env) ? `; ${EGL_FROM_WORKER}` : '';
        tried.push(`${where}: no adapter (driver missing or rejected by Dawn)${hint}`);
        continue;
      }
      keep(adapter);
      const info = adapter.info;
      const description = info?.description || info?.device || 'unknown adapter';
      return {
        choice: {
          gpu,
          adapter,
          backend: a.backend,
          flags: a.flags,
          featureLevel: a.featureLevel,
          description,
        },
        summary: summaryOf(a, env),
        tried: [...tried, `${where}: ${description}`],
        version: dawnVersion,
      };
    } catch (err) {
      tried.push(`${where}: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`);
    }
  }
  return { choice: undefined, summary: 'no adapter', tried, version: dawnVersion };
}

function summaryOf(a: Attempt, env: NodeJS.ProcessEnv): string {
  const egl = a.backend === 'opengles' ? `, EGL_PLATFORM=${env.EGL_PLATFORM ?? 'unset'}` : '';
  return `Dawn backend ${a.backend} (feature level ${a.featureLevel}${egl}${isMainThread ? '' : ', from a Worker'})`;
}

export function dawnPackageVersion(): string {
  return dawnVersion;
}
