import { devexitWarning, warn } from './diagnostics.js';
import { coreState } from './state.js';
import type { Layers, OnTimeout, ReportMode, Settings, ShutdownSignal, WorkersMode } from './types.js';
import { clip } from './validate.js';

/**
 * Every DEVEXIT_* setting of @devexit/core and @devexit/native is read and parsed here, and only
 * here: the native code reads no environment (@devexit/native pushes these values into the
 * process-wide registry when it loads).
 *
 * Grammar (values are trimmed; words are case-insensitive; an empty value is unset):
 * - DEVEXIT_GUARD: a switch. 0, off, false or no turn every exit layer off (for comparisons);
 *   1, on, true or yes keep the default.
 * - DEVEXIT_LAYERS: a comma-separated list of js, tls, atexit, or all; 0, off, false, no or none
 *   for none.
 * - DEVEXIT_TIMEOUT_MS: the deadline of the whole close, a whole number of ms, clamped to
 *   1..2147483647 (a warning says so); 0, off, false or no: the maximum (no practical deadline).
 *   Default 3000.
 * - DEVEXIT_ON_TIMEOUT: exit (default) or warn.
 * - DEVEXIT_REPORT: 0, off, false or no (default); 1, on, true, yes or text for one readable line
 *   per close at exit; json for `devexit:report {...}` lines.
 * - DEVEXIT_SIGNALS: signals on which the main thread runs shutdown() and then ends by the
 *   signal: a comma-separated list of SIGINT, SIGTERM, SIGHUP (the SIG prefix optional); 1, on,
 *   true or yes for SIGINT,SIGTERM; 0, off, false, no or none (default) for none. This realm's own.
 * - DEVEXIT_WORKERS: off (default) or guard: a plain worker.terminate() goes through devexit's
 *   terminate() (critical sections and the Worker's closes first). This realm's own.
 * Every value that is ignored, or clamped, warns once (a process warning, DEVEXIT_SETTING).
 */

export type { Layers, OnTimeout, ReportMode, Settings, ShutdownSignal, WorkersMode } from './types.js';

/** Signals on which devexit can drain and close, then end the process by the signal. */
export const SHUTDOWN_SIGNALS: readonly ShutdownSignal[] = Object.freeze(['SIGINT', 'SIGTERM', 'SIGHUP']);
/** What DEVEXIT_WORKERS and configure({ workers }) take. */
export const WORKERS_MODES: readonly WorkersMode[] = Object.freeze(['off', 'guard']);

export const DEFAULT_TIMEOUT_MS = 3000;
/** The deadline's range, in ms: values outside are clamped (environment) or refused (configure()). */
export const TIMEOUT_MS_RANGE: Readonly<{ min: number; max: number }> = Object.freeze({
  min: 1,
  max: 2147483647,
});

const DEFAULT_SOURCE = 'the default';
const ALL_LAYERS: Layers = Object.freeze({ js: true, tls: true, atexit: true });
const NO_LAYERS: Layers = Object.freeze({ js: false, tls: false, atexit: false });

const OFF = new Set(['0', 'off', 'false', 'no']);
const ON = new Set(['1', 'on', 'true', 'yes']);

/** Up to 80 characters of a value, for a warning. */
function shown(value: string): string {
  return JSON.stringify(clip(value));
}

function ignored(name: string, value: string, expected: string): string {
  return `devexit: ignoring ${name}=${shown(value)}: expected ${expected}`;
}

/** A switch: true, false, or undefined when unset or ignored (with a warning). */
function readSwitch(name: string, raw: string | undefined, warnings: string[]): boolean | undefined {
  const value = raw?.trim().toLowerCase();
  if (!value) return undefined;
  if (OFF.has(value)) return false;
  if (ON.has(value)) return true;
  warnings.push(ignored(name, raw ?? '', '0, off, false or no; 1, on, true or yes'));
  return undefined;
}

function readLayers(raw: string | undefined, warnings: string[]): Layers | undefined {
  const value = raw?.trim().toLowerCase();
  if (!value) return undefined;
  if (OFF.has(value) || value === 'none') return NO_LAYERS;
  const layers = { js: false, tls: false, atexit: false };
  for (const word of value.split(',').map((w) => w.trim())) {
    if (word === 'all') Object.assign(layers, ALL_LAYERS);
    else if (word === 'js' || word === 'tls' || word === 'atexit') layers[word] = true;
    else {
      warnings.push(
        ignored('DEVEXIT_LAYERS', raw ?? '', 'a comma-separated list of js, tls, atexit or all, or none'),
      );
      return undefined;
    }
  }
  return Object.freeze(layers);
}

const NO_SIGNALS: readonly ShutdownSignal[] = Object.freeze([]);
const DEFAULT_ON_SIGNALS: readonly ShutdownSignal[] = Object.freeze(['SIGINT', 'SIGTERM']);

function readSignals(raw: string | undefined, warnings: string[]): readonly ShutdownSignal[] {
  const value = raw?.trim().toUpperCase();
  if (!value) return NO_SIGNALS;
  const word = value.toLowerCase();
  if (OFF.has(word) || word === 'none') return NO_SIGNALS;
  if (ON.has(word)) return DEFAULT_ON_SIGNALS;
  const out: ShutdownSignal[] = [];
  for (const name of value.split(',').map((w) => w.trim())) {
    const full = (name.startsWith('SIG') ? name : `SIG${name}`) as ShutdownSignal;
    if (!SHUTDOWN_SIGNALS.includes(full)) {
      warnings.push(
        ignored(
          'DEVEXIT_SIGNALS',
          raw ?? '',
          `a comma-separated list of ${SHUTDOWN_SIGNALS.join(', ')}, or none`,
        ),
      );
      return NO_SIGNALS;
    }
    if (!out.includes(full)) out.push(full);
  }
  return Object.freeze(out);
}

/**
 * A whole number in [min, max] from the environment: clamped with a warning when outside;
 * undefined (with a warning) when not a whole number. `off` words give `offValue` if allowed.
 */
export function parseEnvInteger(
  name: string,
  raw: string | undefined,
  range: { min: number; max: number; offValue?: number },
  warnings: string[],
): number | undefined {
  const value = raw?.trim();
  if (!value) return undefined;
  if (range.offValue !== undefined && OFF.has(value.toLowerCase())) return range.offValue;
  if (!/^[0-9]+$/.test(value)) {
    warnings.push(ignored(name, raw ?? '', `a whole number in ${range.min}..${range.max}`));
    return undefined;
  }
  const n = Number(value);
  // 0 written with leading zeros is the off word's 0 too.
  if (n === 0 && range.offValue !== undefined) return range.offValue;
  if (n < range.min || n > range.max) {
    const clamped = n < range.min ? range.min : range.max;
    warnings.push(
      `devexit: ${name}=${shown(raw ?? '')} is outside ${range.min}..${range.max}: using ${clamped}`,
    );
    return clamped;
  }
  return n;
}

/** Parses the settings from an environment. Pure: the warnings are returned, not emitted. */
export function parseSettings(env: Readonly<Record<string, string | undefined>>): {
  settings: Settings;
  warnings: string[];
} {
  const warnings: string[] = [];
  let timeoutMs = DEFAULT_TIMEOUT_MS;
  let timeoutSource = DEFAULT_SOURCE;
  const t = parseEnvInteger(
    'DEVEXIT_TIMEOUT_MS',
    env.DEVEXIT_TIMEOUT_MS,
    { ...TIMEOUT_MS_RANGE, offValue: TIMEOUT_MS_RANGE.max },
    warnings,
  );
  if (t !== undefined) {
    timeoutMs = t;
    timeoutSource = `DEVEXIT_TIMEOUT_MS=${(env.DEVEXIT_TIMEOUT_MS ?? '').trim()}`;
  }

  let onTimeout: OnTimeout = 'exit';
  let onTimeoutSource = DEFAULT_SOURCE;
  const o = env.DEVEXIT_ON_TIMEOUT?.trim().toLowerCase();
  if (o === 'exit' || o === 'warn') {
    onTimeout = o;
    onTimeoutSource = `DEVEXIT_ON_TIMEOUT=${o}`;
  } else if (o) {
    warnings.push(ignored('DEVEXIT_ON_TIMEOUT', env.DEVEXIT_ON_TIMEOUT ?? '', 'exit or warn'));
  }

  let report: ReportMode = 'off';
  const r = env.DEVEXIT_REPORT?.trim().toLowerCase();
  if (r === 'json') report = 'json';
  else if (r === 'text' || (r && ON.has(r))) report = 'text';
  else if (r && !OFF.has(r)) {
    warnings.push(
      ignored(
        'DEVEXIT_REPORT',
        env.DEVEXIT_REPORT ?? '',
        '0, off, false or no; 1, on, true, yes or text; json',
      ),
    );
  }

  const guard = readSwitch('DEVEXIT_GUARD', env.DEVEXIT_GUARD, warnings);
  const listed = readLayers(env.DEVEXIT_LAYERS, warnings);
  let layers = listed ?? ALL_LAYERS;
  if (guard === false) {
    if (listed !== undefined)
      warnings.push(
        `devexit: ignoring DEVEXIT_LAYERS: DEVEXIT_GUARD=${env.DEVEXIT_GUARD} turns every layer off`,
      );
    layers = NO_LAYERS;
  }

  const signals = readSignals(env.DEVEXIT_SIGNALS, warnings);

  let workers: WorkersMode = 'off';
  const w = env.DEVEXIT_WORKERS?.trim().toLowerCase();
  if (w === 'guard' || w === 'off') workers = w;
  else if (w) warnings.push(ignored('DEVEXIT_WORKERS', env.DEVEXIT_WORKERS ?? '', 'off or guard'));

  const settings: Settings = Object.freeze({
    timeoutMs,
    onTimeout,
    layers,
    report,
    signals,
    workers,
    sources: Object.freeze({ timeoutMs: timeoutSource, onTimeout: onTimeoutSource }),
  });
  return { settings, warnings };
}

/**
 * Emits a warning once per JS realm (a Worker's environment may differ, so each realm reads and
 * warns for its own).
 */
export function warnOnce(text: string, code = 'DEVEXIT_SETTING'): void {
  const state = coreState();
  if (state.warned.has(text)) return;
  state.warned.add(text);
  warn(devexitWarning(text, code));
}

/** This realm's settings: the environment's, then configure()'s. Parsed once, warnings once. */
export function realmSettings(): Settings {
  const state = coreState();
  if (state.settings) return state.settings;
  const { settings, warnings } = parseSettings(process.env);
  state.settings = settings;
  for (const w of warnings) warnOnce(w);
  return settings;
}

/**
 * The settings in force. With @devexit/native loaded they are process-wide: the registry's owner
 * holds one policy for every realm and every installed copy (the first environment to load, then
 * configure() from anywhere); without it, this realm's.
 */
export function settings(): Settings {
  const native = coreState().native;
  if (!native) return realmSettings();
  const realm = realmSettings();
  return { ...native.settings(), signals: realm.signals, workers: realm.workers };
}

/**
 * A whole-number setting of a backend (DEVEXIT_CPU_THREADS, ...), with the same grammar and
 * warnings as core's own: `fallback` when unset or ignored.
 */
export function envInteger(
  name: string,
  range: { min: number; max: number },
  fallback: number,
  env: NodeJS.ProcessEnv = process.env,
): number {
  const warnings: string[] = [];
  const n = parseEnvInteger(name, env[name], range, warnings);
  for (const w of warnings) warnOnce(w);
  return n ?? fallback;
}

/**
 * A setting of a backend that is one word of `choices` (DEVEXIT_WGPU_BACKEND), with core's
 * grammar: trimmed, case-insensitive, a warning naming the variable for anything else, and
 * `fallback` when unset or ignored.
 */
export function envChoice<T extends string>(
  name: string,
  choices: readonly T[],
  fallback: T | undefined,
  env: NodeJS.ProcessEnv = process.env,
): T | undefined {
  const raw = env[name];
  const value = raw?.trim().toLowerCase();
  if (!value) return fallback;
  const found = choices.find((c) => c.toLowerCase() === value);
  if (found !== undefined) return found;
  warnOnce(ignored(name, raw ?? '', `one of ${choices.join(', ')}`));
  return fallback;
}

/** A switch setting of a backend, with core's grammar: `fallback` when unset or ignored. */
export function envSwitch(name: string, fallback: boolean): boolean {
  const warnings: string[] = [];
  const value = readSwitch(name, process.env[name], warnings);
  for (const w of warnings) warnOnce(w);
  return value ?? fallback;
}
