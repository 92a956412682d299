// isExiting(): every enqueue of every backend calls it; critical(): what wraps a native call.
import { fixture, median, nodeJson, row } from './common.mjs';

export default async function hotpath({ quick }) {
  const calls = quick ? 5e6 : 3e7;
  const rows = [];
  for (const native of [true, false]) {
    // Several children: a child's code placement can favour one loop; medians over all samples.
    const all = { plain: [], core: [] };
    for (let c = 0; c < (quick ? 2 : 4); c++) {
      const s = nodeJson([fixture('isExiting.cjs'), String(calls), native ? 'native' : 'no-native']);
      all.plain.push(...s.plain.slice(1)); // the first round warms up
      all.core.push(...s.core.slice(1));
    }
    rows.push(
      row({
        name: native ? 'isExiting() through core (native loaded)' : 'isExiting() through core (core alone)',
        value: median(all.core),
        unit: 'ns/call',
        baseline: median(all.plain),
        baselineName: 'a function returning a module boolean',
        target: native ? '≤ 2× baseline' : undefined,
        met: native ? (r) => r.ratio <= 2 : undefined,
        detail: `median of ${all.core.length} loops of ${calls.toLocaleString('en-US')} calls, ${quick ? 2 : 4} processes`,
      }),
    );
  }
  // critical(fn) around every native call of a Worker (issue 16): <= 100 ns a call, no allocation.
  const all = { plain: [], critical: [], gcs: 0 };
  const processes = quick ? 2 : 4;
  for (let c = 0; c < processes; c++) {
    const s = nodeJson([fixture('critical.cjs'), String(calls)]);
    all.plain.push(...s.plain.slice(1));
    all.critical.push(...s.critical.slice(1));
    all.gcs += s.gcs;
  }
  rows.push(
    row({
      name: 'critical(fn) around a synchronous call',
      value: median(all.critical),
      unit: 'ns/call',
      baseline: median(all.plain),
      baselineName: 'the same empty function called directly',
      target: '≤ 100 ns a call, no allocation',
      met: (r) => r.value <= 100 && all.gcs === 0,
      detail: `median of ${all.critical.length} loops of ${calls.toLocaleString('en-US')} calls, ${processes} processes; garbage collections during the critical() loops: ${all.gcs}`,
    }),
  );
  return rows;
}
