// wgpu: 10,000 small dispatches and a readback, through devexit and through raw Dawn.
import { fixture, median, nodeJson, row } from './common.mjs';

export default async function wgpuSection({ quick }) {
  let r;
  try {
    r = nodeJson([fixture('wgpu.cjs'), String(quick ? 5 : 11)], { timeout: 300_000 });
  } catch (err) {
    return [
      row({
        name: 'wgpu 10,000 small dispatches + readback',
        value: null,
        unit: 'ms',
        target: '≤ 1.10× baseline',
        detail: `not measured: ${String(err.message).split('\n')[0].slice(0, 200)}`,
      }),
    ];
  }
  return [
    row({
      name: 'wgpu 10,000 small dispatches + readback',
      value: median(r.devexitMs),
      unit: 'ms',
      baseline: median(r.rawMs),
      baselineName: 'raw Dawn (npm webgpu) doing the same',
      target: '≤ 1.10× baseline',
      met: (x) => x.ratio <= 1.1,
      detail: `saxpy_f32 on 16 elements, the same WGSL; ${r.adapter}; median of ${r.rawMs.length} rounds each, interleaved`,
    }),
  ];
}
