import { type CoreState, coreState, type NativeBridge } from './state.js';

/**
 * The hot path: isExiting() is called on every enqueue of every backend, so its answer is one
 * typed-array load from a module variable, which V8 inlines without a call or a property lookup.
 * `flag` is:
 * - a word holding 1, once this realm began closing for exit (CoreState.exiting);
 * - else a view of @devexit/native's process-wide flag, once native loaded;
 * - else a word holding 0.
 * A plain load, not Atomics.load (which V8 does not inline: ~10 ns a call here): the flag only
 * ever goes from 0 to 1, and any later read sees it. `viaCall` is the bridge, only where the
 * runtime refused the external buffer. Every copy of @devexit/core in a realm keeps its variables
 * in step with the shared state through CoreState.syncs (see markExiting and installNativeBridge).
 */
const NEVER = new Uint32Array(1);
const ALWAYS = new Uint32Array([1]);
let flag: Uint32Array = NEVER;
let viaCall: NativeBridge | undefined;

function sync(state: CoreState): void {
  const native = state.native;
  flag = state.exiting ? ALWAYS : (native?.exitingView ?? NEVER);
  viaCall = native && !native.exitingView ? native : undefined;
}

const state = coreState();
state.syncs.push(sync);
sync(state);

/**
 * True once the process began closing services for exit (or after closeServices()). Reads the
 * native flag through a typed-array view: no call into native code.
 */
export function isExiting(): boolean {
  return flag[0] !== 0 || viaCall?.isExiting() === true;
}

/** Tells every copy of core in this realm what changed in the shared state. */
export function syncCopies(s: CoreState): void {
  for (const f of s.syncs) f(s);
}

/** This realm's JS exit began: isExiting() is true from now on. */
export function markExiting(): void {
  const s = coreState();
  if (s.exiting) return;
  s.exiting = true;
  syncCopies(s);
}
