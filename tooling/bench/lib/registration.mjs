// Registration: O(1) per key means the same cost per key at 1k and at 1M keys.
import { fixture, interleave, median, nodeJson, row } from './common.mjs';

const reg = (what, n) => nodeJson([fixture('reg.cjs'), what, String(n)]).cpuNs;

export default async function registration({ quick }) {
  const runs = quick ? 3 : 7;
  const sizes = [1_000, 10_000, 100_000, 1_000_000];
  const variants = {};
  for (const n of sizes) {
    variants[`registry${n}`] = () => reg('registry', n);
    variants[`floor${n}`] = () => reg('floor', n);
  }
  const listSizes = quick ? [1_000, 8_000] : [1_000, 8_000, 32_000];
  for (const n of listSizes) variants[`list${n}`] = () => reg('list', n);
  const s = await interleave(runs, variants);
  const m = (k) => median(s[k]);
  const at = (what) => sizes.map((n) => `${n / 1000}k ${m(`${what}${n}`).toFixed(0)}`).join(', ');
  const lastList = listSizes[listSizes.length - 1];
  return [
    row({
      name: 'registration per key at 1M keys',
      value: m('registry1000000'),
      unit: 'ns/key',
      baseline: m('registry1000'),
      baselineName: 'the same at 1k keys',
      target: '≤ 1.3× baseline (flat: O(1))',
      met: (r) => r.ratio <= 1.3,
      detail:
        `devexit's registry through devexit.h, CPU time per key: ${at('registry')} ns; ` +
        `the bare index of the same shape (no lock, no records): ${at('floor')} ns; median of ${runs} processes each`,
    }),
    row({
      name: `the seed's list scan per key at ${lastList / 1000}k keys`,
      value: m(`list${lastList}`),
      unit: 'ns/key',
      baseline: m('list1000'),
      baselineName: 'the same at 1k keys',
      detail: `O(n): ${listSizes.map((n) => `${n / 1000}k ${m(`list${n}`).toFixed(0)}`).join(', ')} ns per key (1M keys would take ~${((m(`list${lastList}`) * (1e6 / lastList) * 1e6) / 1e9 / 60).toFixed(0)} min)`,
    }),
  ];
}
