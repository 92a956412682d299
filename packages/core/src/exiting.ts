import { type CoreState, coreState, type NativeBridge } from './state.js';

/**
 * The hot path: isExiting() is called on every enqueue of every backend, so its answer lives in
 * this module's own variables, which V8 reads without a call or a property lookup:
 * - `realmExiting`: this realm began closing for exit (mirrors CoreState.exiting);
 * - `flag`: a view of @devexit/native's process-wide flag once it loaded, else a zero word, so the
 *   read is one typed-array load either way (a plain load, not Atomics.load, which V8 does not
 *   inline: the flag only ever goes from 0 to 1, and any later read sees it);
 * - `viaCall`: the bridge, only where the runtime refused the external buffer.
 * Every copy of @devexit/core in a realm keeps its own variables in step with the shared state
 * through CoreState.syncs (see markExiting and installNativeBridge).
 */
const NEVER = new Uint32Array(1);
let realmExiting = false;
let flag: Uint32Array = NEVER;
let viaCall: NativeBridge | undefined;

function sync(state: CoreState): void {
  realmExiting = state.exiting;
  const native = state.native;
  flag = native?.exitingView ?? NEVER;
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
  return realmExiting || flag[0] !== 0 || (viaCall !== undefined && viaCall.isExiting());
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
