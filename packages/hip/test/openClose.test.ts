import { defineOpenCloseMemory } from '@devexit/conformance';
import { standinHipPath } from '@devexit/standins-hip';

// On the stand-in libamdhip64 (no AMD GPU here): what is measured is the shared service layer.
defineOpenCloseMemory({
  name: 'hip',
  label: 'stand-in libamdhip64',
  childModule: '@devexit/hip',
  childEnv: { DEVEXIT_HIP_LIBRARY: standinHipPath },
});
