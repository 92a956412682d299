import { Completions } from '@devexit/backend';
import { unavailableError } from '@devexit/core';
import { type HipAddon, hipAddon } from './addon.js';
import { withHipError } from './errors.js';

let completions: Completions | undefined;
let onQueueClosed: (index: number) => void = () => {};

/** The addon, or ERR_DEVEXIT_UNAVAILABLE naming every place the loader tried. */
export function addon(): HipAddon {
  try {
    return hipAddon();
  } catch (err) {
    throw unavailableError('hip', `addon missing: ${(err as Error).message}`);
  }
}

/** This realm's promises waiting for hip's service threads (queues and the compiler). */
export function realm(): Completions {
  if (!completions) {
    completions = new Completions(addon());
    completions.decorate = withHipError;
    completions.onClosed = (index, service) => {
      if (service === 'queue') onQueueClosed(index);
    };
  }
  return completions;
}

/** Who hears that a device's queue closed in another realm or by closeServices(). */
export function setQueueClosedHandler(handler: (index: number) => void): void {
  onQueueClosed = handler;
}
