// `devexit doctor run --timeline`: the picture of an exit, checked in a real browser (Debian's
// chromium, headless): its screenshot has each close's colour where the report says the close
// ran, the markers where the exit began, ended and the deadline falls.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { RunReport } from '../src/run.js';
import { COLORS, ticks } from '../src/timelineSvg.js';
import { closeTimings } from '../src/timing.js';
import { dumpDom, findChromium, screenshot } from './browser.js';
import { run, show } from './helpers.js';
import { near, pixel } from './png.js';

const fixture = (name: string) => join(__dirname, 'fixtures', name);
const work = mkdtempSync(join(tmpdir(), 'devexit-timeline-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const entry = (type: string, index: number, service: string, ms: number, layer = 'js-exit') => ({
  device: { type, typeId: 9, index },
  service,
  layer,
  ms,
  outcome: 'ok' as const,
  pid: 7,
});

describe('when each close ran', () => {
  it('JS closes where they were published; a native batch after them, devices in parallel, services in turn', () => {
    const reports = [
      { entry: entry('sim', 0, 'stream', 5), at: 20 },
      { entry: entry('cpu', 0, 'queue', 2), at: 40 },
      { entry: entry('cpu', 0, 'compiler', 3), at: 40 },
      { entry: entry('cuda', 0, 'queue', 4), at: 40 },
      { entry: entry('hip', 0, 'queue', 1, 'atexit'), at: 90 },
    ];
    const published = [
      { pid: 7, t: 15, device: { type: 'sim', index: 0 }, service: 'stream', layer: 'js-exit', ms: 5 },
      { pid: 7, t: 30, device: { type: 'cpu', index: 0 }, service: 'queue', layer: 'js-exit', ms: 2 },
      { pid: 7, t: 30, device: { type: 'cpu', index: 0 }, service: 'compiler', layer: 'js-exit', ms: 3 },
      { pid: 7, t: 30, device: { type: 'cuda', index: 0 }, service: 'queue', layer: 'js-exit', ms: 4 },
    ];
    const registered = ['queue', 'compiler'].flatMap((service) =>
      ['cpu', 'cuda'].map((type) => ({ pid: 7, device: { type, index: 0 }, service, registry: 'native' })),
    );
    registered.push({ pid: 7, device: { type: 'sim', index: 0 }, service: 'stream', registry: 'js' });
    const t = closeTimings(reports, published, registered, new Map([[7, 8]]));
    expect(t.map((c) => [`${c.device}/${c.service}`, c.startMs, c.timing])).toEqual([
      ['sim:0/stream', 10, 'measured'],
      ['cpu:0/queue', 15, 'reconstructed'],
      ['cpu:0/compiler', 17, 'reconstructed'],
      ['cuda:0/queue', 15, 'reconstructed'],
      // Only its report line was seen (the atexit layer runs after JS is gone).
      ['hip:0/queue', 89, 'approximate'],
    ]);
  });

  it('a close nobody registered, and not among the JS closes when the exit began: native', () => {
    const reports = [{ entry: entry('hip-host', 0, 'compiler', 0.3), at: 50 }];
    const published = [
      {
        pid: 7,
        t: 40,
        device: { type: 'hip-host', index: 0 },
        service: 'compiler',
        layer: 'js-exit',
        ms: 0.3,
      },
    ];
    const asJs = closeTimings(reports, published, []);
    expect(asJs[0]).toMatchObject({ startMs: 39.7, timing: 'measured' });
    const native = closeTimings(
      reports,
      published,
      [],
      new Map([[7, 30]]),
      new Map([[7, new Set<string>()]]),
    );
    expect(native[0]).toMatchObject({ startMs: 30, timing: 'reconstructed' });
  });

  it('axis ticks fall on 1, 2 or 5 × 10^k', () => {
    expect(ticks(0, 31)).toEqual([0, 10, 20, 30]);
    expect(ticks(0, 12)).toEqual([0, 2, 4, 6, 8, 10, 12]);
    expect(ticks(-2, 150)).toEqual([0, 50, 100, 150]);
    expect(ticks(0, 0.9)).toEqual([0, 0.2, 0.4, 0.6, 0.8]);
  });
});

const browser = findChromium();
const required = /^(1|true|yes)$/i.test(process.env.DEVEXIT_REQUIRE_CHROMIUM ?? '');

interface Drawn {
  x: number;
  y: number;
  width: number;
  height: number;
  fill: string;
  outcome: string;
  device: string;
  service: string;
}

/** The bars and markers as the SVG text places them. */
function parseSvg(svg: string) {
  const attr = (tag: string, name: string) => new RegExp(`\\b${name}="([^"]*)"`).exec(tag)?.[1] ?? '';
  const bars: Drawn[] = [...svg.matchAll(/<rect class="bar"[^>]*>/g)].map(([tag]) => ({
    x: Number(attr(tag, 'x')),
    y: Number(attr(tag, 'y')),
    width: Number(attr(tag, 'width')),
    height: Number(attr(tag, 'height')),
    fill: attr(tag, 'fill'),
    outcome: attr(tag, 'data-outcome'),
    device: attr(tag, 'data-device'),
    service: attr(tag, 'data-service'),
  }));
  const markers = Object.fromEntries(
    [...svg.matchAll(/<line class="marker"[^>]*>/g)].map(([tag]) => [
      attr(tag, 'data-kind'),
      { x: Number(attr(tag, 'x1')), y: Number(attr(tag, 'y1')), color: attr(tag, 'stroke') },
    ]),
  );
  const size = /<svg[^>]* width="(\d+)" height="(\d+)"/.exec(svg);
  return { bars, markers, width: Number(size?.[1]), height: Number(size?.[2]) };
}

function doctorRun(args: string[], env: Record<string, string | undefined> = {}) {
  const r = run(['doctor', 'run', '--json', ...args], { DEVEXIT_REQUIRE_BACKENDS: undefined, ...env });
  return { ...r, report: JSON.parse(r.stdout) as RunReport };
}

describe.skipIf(!browser && !required)(
  `the exit timeline in chromium${browser ? '' : ' (not installed: apt-get install chromium)'}`,
  () => {
    const chromium = () => {
      if (!browser)
        throw new Error(
          'DEVEXIT_REQUIRE_CHROMIUM is set but no chromium was found (apt-get install chromium)',
        );
      return browser;
    };

    it('process.exit(0) with two JS closes (one fails) and a cpu queue: each bar drawn in its colour where it ran, the deadline and the end marked', () => {
      const svgFile = join(work, 'exit.svg');
      const r = doctorRun(['--timeline', svgFile, '--', fixture('timelineExit.cjs')], {
        DEVEXIT_TIMEOUT_MS: '150',
      });
      expect(r.status, show(r)).toBe(0);
      const times = Object.fromEntries(r.report.closeTimes.map((c) => [`${c.device}/${c.service}`, c]));
      const sim0 = times['sim:0/stream']!;
      const sim1 = times['sim:1/stream']!;
      const cpu = times['cpu:0/queue']!;
      // JS closes run one after another, then the native ones.
      expect(sim0).toMatchObject({ outcome: 'ok', timing: 'measured', layer: 'js-exit' });
      expect(sim1).toMatchObject({ outcome: 'error', timing: 'measured' });
      expect(cpu).toMatchObject({ outcome: 'ok', timing: 'reconstructed' });
      expect(sim0.ms).toBeGreaterThanOrEqual(40);
      expect(sim1.startMs).toBeGreaterThanOrEqual(sim0.startMs + sim0.ms - 0.5);
      expect(cpu.startMs).toBeGreaterThanOrEqual(sim1.startMs + sim1.ms - 0.5);

      const svg = readFileSync(svgFile, 'utf8');
      expect(svg).toContain('started by   process.exit(0) → js-exit, code 0');
      expect(svg).toContain('ended        exit code 0');
      const { bars, markers, width, height } = parseSvg(svg);
      expect(bars.map((b) => `${b.device}/${b.service} ${b.outcome}`).sort()).toEqual([
        'cpu:0/queue ok',
        'sim:0/stream ok',
        'sim:1/stream error',
      ]);
      const shot = screenshot(chromium(), svgFile, width, height);
      expect([shot.width, shot.height]).toEqual([width, height]);
      for (const b of bars) {
        const where = `${b.device}/${b.service} at (${b.x}, ${b.y})`;
        expect(pixel(shot, b.x + b.width / 2, b.y + b.height / 2), where).toSatisfy((c: string) =>
          near(c, b.outcome === 'ok' ? COLORS.ok : COLORS.error),
        );
        // Nothing drawn just above the bar: it is where the SVG says.
        expect(pixel(shot, b.x + b.width / 2, b.y - 3), where).toSatisfy((c: string) => near(c, '#fafafa'));
      }
      const bar = (key: string) => bars.find((b) => `${b.device}/${b.service}` === key)!;
      // In the picture too: sim:1 begins where sim:0 ends, the cpu queue after both.
      expect(bar('sim:1/stream').x).toBeGreaterThanOrEqual(
        bar('sim:0/stream').x + bar('sim:0/stream').width - 1.5,
      );
      expect(bar('cpu:0/queue').x).toBeGreaterThanOrEqual(
        bar('sim:1/stream').x + bar('sim:1/stream').width - 1.5,
      );
      for (const [kind, color] of [
        ['start', COLORS.start],
        ['end', COLORS.end],
        ['deadline', COLORS.deadline],
      ] as const) {
        const m = markers[kind];
        expect(m, kind).toBeDefined();
        expect(pixel(shot, m!.x, m!.y + 3), kind).toSatisfy((c: string) => near(c, color));
      }
      // The exit began before the closes and ended after them, the deadline after the end.
      expect(markers.start!.x).toBeLessThanOrEqual(bar('sim:0/stream').x + 1);
      expect(markers.end!.x).toBeGreaterThan(bar('cpu:0/queue').x);
      expect(markers.deadline!.x).toBeGreaterThan(markers.end!.x);
    });

    it('a crash at exit without devexit: no bars, the end marked in the crash colour, SIGSEGV named', () => {
      const svgFile = join(work, 'crash.svg');
      const r = doctorRun(['--timeline', svgFile, '--', fixture('standinExit.cjs')], {
        DEVEXIT_GUARD: '0',
        DEVEXIT_STANDIN_TEARDOWN_MS: '200',
      });
      expect(r.report.verdict, show(r)).toBe('crash-at-exit');
      const svg = readFileSync(svgFile, 'utf8');
      const { bars, markers, width, height } = parseSvg(svg);
      expect(bars).toEqual([]);
      expect(svg).toContain('no closes ran');
      expect(svg).toContain('ended        SIGSEGV');
      const shot = screenshot(chromium(), svgFile, width, height);
      expect(pixel(shot, markers.end!.x, markers.end!.y + 3)).toSatisfy((c: string) => near(c, COLORS.crash));
    });

    it('--timeline out.html: the picture with the report beside it, laid out by the browser', () => {
      const page = join(work, 'shutdown.html');
      const r = doctorRun(['--timeline', page, '--', fixture('timelineExit.cjs'), 'sigint'], {
        DEVEXIT_SIGNALS: 'SIGINT',
      });
      expect(r.report, show(r)).toMatchObject({ verdict: 'signal', signal: 'SIGINT' });
      expect(r.report.processes[0]!.exitBegan).toMatchObject({ layer: 'shutdown', signal: 'SIGINT' });
      const html = readFileSync(page, 'utf8');
      expect(html).toContain('started by   signal SIGINT → shutdown, signal SIGINT');
      // Where the browser put things: a script of the test's measures the page it was given.
      const measured = join(work, 'measured.html');
      writeFileSync(
        measured,
        html.replace(
          '</body>',
          `<script>
          const box = (e) => { const r = e.getBoundingClientRect(); return { x: r.x, y: r.y, width: r.width, height: r.height }; };
          document.body.setAttribute('data-geometry', JSON.stringify({
            figure: box(document.getElementById('timeline')),
            report: box(document.getElementById('timeline-report')),
            bars: [...document.querySelectorAll('rect.bar')].map((b) => ({ ...box(b), fill: b.getAttribute('fill'), key: b.dataset.device + '/' + b.dataset.service })),
          }));
        </script></body>`,
        ),
      );
      const dom = dumpDom(chromium(), measured, 1600, 900);
      const json = /data-geometry="([^"]*)"/.exec(dom)?.[1];
      expect(json, dom.slice(0, 2000)).toBeDefined();
      const g = JSON.parse(json!.replace(/&quot;/g, '"').replace(/&amp;/g, '&')) as {
        figure: { x: number; y: number; width: number; height: number };
        report: { x: number; y: number; width: number };
        bars: Array<{ x: number; y: number; width: number; height: number; fill: string; key: string }>;
      };
      expect(g.report.x, 'the report is beside the picture').toBeGreaterThanOrEqual(
        g.figure.x + g.figure.width,
      );
      expect(g.report.y).toBeLessThan(g.figure.y + g.figure.height);
      expect(g.bars.map((b) => b.key).sort()).toEqual(['cpu:0/queue', 'sim:0/stream', 'sim:1/stream']);
      const shot = screenshot(chromium(), page, 1600, 900);
      for (const b of g.bars) {
        expect(pixel(shot, b.x + b.width / 2, b.y + b.height / 2), b.key).toSatisfy((c: string) =>
          near(c, b.fill),
        );
      }
    });
  },
);
