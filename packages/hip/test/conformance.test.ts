// The cross-backend suite, on the stand-in libamdhip64: kernels cannot run on the real runtime
// without an AMD GPU. On a machine with one, run it with DEVEXIT_HIP_CONFORMANCE_REAL=1 (README).
import { defineConformance } from '@devexit/conformance';
import { standinHipPath } from '@devexit/standins-hip';

const real = process.env.DEVEXIT_HIP_CONFORMANCE_REAL === '1';
if (!real) process.env.DEVEXIT_HIP_LIBRARY = standinHipPath;

defineConformance({
  name: 'hip',
  label: real ? undefined : 'stand-in libamdhip64',
  load: async () => (await import('@devexit/hip')).backend,
  childModule: '@devexit/hip',
  childEnv: real ? {} : { DEVEXIT_HIP_LIBRARY: standinHipPath },
});
