// The example backend against every rule a backend must keep: the conformance suite (argument
// rules, results, the exit matrix in child processes) and open/close memory. Real everywhere: it
// needs nothing but host memory.
import { defineConformance, defineOpenCloseMemory } from '@devexit/conformance';

defineConformance({
  name: 'example',
  load: async () => (await import('@devexit/example-backend')).backend,
  childModule: '@devexit/example-backend',
  runs: 10,
});

defineOpenCloseMemory({ name: 'example', childModule: '@devexit/example-backend' });
