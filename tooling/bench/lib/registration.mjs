// Registration: O(1) per key means the same cost per key at 1k and at 1M keys. Beside the
// registry through devexit.h, the same key table without the ABI call (with the registry's lock,
// without it, with its index sized first) and the bare index say what each layer costs, and the
// same registry on cold memory what the page faults cost.
import { fixture, interleave, median, nodeJson, row } from './common.mjs';

// No exit layer: the fixture's exit would otherwise close every key it registered (a million
// closes take seconds), which is not what it measures.
const reg = (what, n, cold) =>
  nodeJson([fixture('reg.cjs'), what, String(n), ...(cold ? ['cold'] : [])], {
    env: { DEVEXIT_LAYERS: 'none' },
  });

export default async function registration({ quick }) {
  const runs = quick ? 3 : 7;
  const sizes = [1_000, 10_000, 100_000, 1_000_000];
  const ends = [1_000, 1_000_000];
  const layers = ['table-lock', 'table', 'table-presized', 'floor'];
  const variants = {};
  for (const n of sizes) variants[`registry${n}`] = () => reg('registry', n);
  for (const what of layers) for (const n of ends) variants[`${what}${n}`] = () => reg(what, n);
  for (const n of ends) variants[`cold${n}`] = () => reg('registry', n, true);
  const listSizes = quick ? [1_000, 8_000] : [1_000, 8_000, 32_000];
  for (const n of listSizes) variants[`list${n}`] = () => reg('list', n);
  const s = await interleave(runs, variants);
  const m = (k, field = 'cpuNs') => median(s[k].map((x) => x[field]));
  const at = (what, ns) => ns.map((n) => `${n / 1000}k ${m(`${what}${n}`).toFixed(0)}`).join(', ');
  const span = (what) => `${at(what, ends)} ns (${(m(`${what}1000000`) / m(`${what}1000`)).toFixed(2)}×)`;
  const lastList = listSizes[listSizes.length - 1];
  return [
    row({
      name: 'registration per key at 1M keys',
      value: m('registry1000000'),
      unit: 'ns/key',
      baseline: m('registry1000'),
      baselineName: 'the same at 1k keys',
      target: '≤ 1.5× baseline (flat: O(1))',
      met: (r) => r.ratio <= 1.5,
      detail:
        `devexit's registry through devexit.h, CPU time per key: ${at('registry', sizes)} ns; ` +
        `its key table without the ABI call, with the registry's lock: ${span('table-lock')}; ` +
        `without the lock: ${span('table')}; without the lock, index sized first: ${span('table-presized')}; ` +
        `the table's filter could not call ${(m('table1000000', 'uncertain') * 100).toFixed(1)}% of the 1M new keys new; ` +
        `malloc keeping faulted-in memory for each (fixtures/reg.cjs); on cold memory: ${span('cold')}, ` +
        `${(m('cold1000', 'faults') * 1000).toFixed(1)} and ${(m('cold1000000', 'faults') * 1000).toFixed(1)} page faults per 1000 keys; ` +
        `median of ${runs} processes each`,
    }),
    row({
      name: 'the bare index (no lock, no records) per key at 1M keys',
      value: m('floor1000000'),
      unit: 'ns/key',
      baseline: m('floor1000'),
      baselineName: 'the same at 1k keys',
      detail: `the registry's 4-byte slots, sized first, hashed the same keys: what the memory charges any index of that size; median of ${runs} processes each`,
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
