// cpu: tiny launches per second, where their time goes, and saxpy's bandwidth next to memcpy's.
import { fixture, median, nodeJson, row } from './common.mjs';

export default async function cpuSection({ quick }) {
  const runs = [];
  for (let i = 0; i < (quick ? 1 : 3); i++) runs.push(nodeJson([fixture('cpu.cjs'), quick ? '1' : '0']));
  const m = (k) => median(runs.map((r) => r[k]));
  const ns = (k) => `${m(k).toFixed(0)} ns`;
  return [
    row({
      name: 'cpu tiny launches (saxpy, 16 elements), submitted and completed',
      value: m('launchesPerS'),
      unit: 'launches/s',
      target: '≥ 1,000,000/s',
      met: (r) => r.value >= 1e6,
      detail:
        `per launch: JS checks + encoding ${ns('jsNs')} (CPU time), native submit ${ns('submitNs')}, ` +
        `queue thread decode + run ${ns('queueNs')} (wall); ${m('threads') ?? ''}; ` +
        `medians of rounds in ${runs.length} process(es)`,
    }),
    row({
      name: 'cpu submit, per launch of a batch',
      value: m('submitNs'),
      unit: 'ns',
      baseline: m('emptyCallNs'),
      baselineName: 'an empty N-API call (the floor of one call per launch)',
      detail:
        'the native half of a launch: the batch of 4096 encoded launches is checked, copied and ' +
        'queued in one call (wall time, the queue thread running meanwhile); the empty call in CPU time',
    }),
    row({
      name: 'cpu saxpy_f32 on 64 MiB vectors',
      value: m('saxpyGBps'),
      unit: 'GB/s',
      baseline: m('memcpyGBps'),
      baselineName: 'memcpy of 64 MiB (one thread)',
      target: '≥ 0.5× baseline',
      met: (r) => r.ratio >= 0.5,
      detail: 'bytes read + written per second: saxpy 3 × 64 MiB (launch to flush), memcpy 2 × 64 MiB',
    }),
  ];
}
