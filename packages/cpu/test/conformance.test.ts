import { defineConformance } from '@devexit/conformance';

// Real everywhere: the cpu backend needs no vendor runtime, so nothing here is a stand-in.
defineConformance({
  name: 'cpu',
  load: async () => (await import('@devexit/cpu')).backend,
  childModule: '@devexit/cpu',
  runs: 20,
});
