/** The line prefix of what probe.ts tells `devexit doctor run` on a program's stderr. */
export const PROBE_PREFIX = 'devexit:doctor ';
