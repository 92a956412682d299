import { Completions } from '@devexit/backend';
import { cudaAddon } from './addon.js';

type ClosedHandler = (index: number) => void;

const handlers = new Map<string, ClosedHandler>();
let completions: Completions | undefined;

/**
 * This realm's pending promises on the addon's service threads (device queues and the compiler
 * alike), and who hears that a service closed elsewhere (closeServices(), another realm, exit).
 */
export function realm(): Completions {
  if (!completions) {
    completions = new Completions(cudaAddon());
    completions.onClosed = (index, service) => handlers.get(service)?.(index);
  }
  return completions;
}

/** `fn` hears that service `service` of device `index` closed. One handler per service name. */
export function onServiceClosed(service: string, fn: ClosedHandler): void {
  handlers.set(service, fn);
}
