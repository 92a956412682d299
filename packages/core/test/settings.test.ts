import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseSettings, TIMEOUT_MS_RANGE } from '../src/index.js';

const all = { js: true, tls: true, atexit: true };
const none = { js: false, tls: false, atexit: false };

describe('DEVEXIT_* grammar (parseSettings)', () => {
  it('defaults', () => {
    expect(parseSettings({})).toEqual({
      settings: {
        timeoutMs: 3000,
        onTimeout: 'exit',
        layers: all,
        report: 'off',
        signals: [],
        workers: 'off',
        sources: { timeoutMs: 'the default', onTimeout: 'the default' },
      },
      warnings: [],
    });
  });

  it.each([
    [' guard ', 'guard', []],
    ['OFF', 'off', []],
    ['', 'off', []],
    ['sometimes', 'off', ['devexit: ignoring DEVEXIT_WORKERS="sometimes": expected off or guard']],
  ])('DEVEXIT_WORKERS=%j is %s', (value, workers, warnings) => {
    expect(parseSettings({ DEVEXIT_WORKERS: value })).toMatchObject({ settings: { workers }, warnings });
  });

  it.each([
    ['0', 'off'],
    ['off', 'off'],
    ['false', 'off'],
    ['FALSE', 'off'],
    ['no', 'off'],
    ['', 'off'],
    ['1', 'text'],
    ['on', 'text'],
    ['true', 'text'],
    ['text', 'text'],
    [' json ', 'json'],
  ])('DEVEXIT_REPORT=%j is %s', (value, report) => {
    expect(parseSettings({ DEVEXIT_REPORT: value })).toMatchObject({ settings: { report }, warnings: [] });
  });

  it.each([
    ['0', none],
    ['off', none],
    ['false', none],
    ['1', all],
    ['on', all],
    ['true', all],
  ])('DEVEXIT_GUARD=%j', (value, layers) => {
    expect(parseSettings({ DEVEXIT_GUARD: value })).toMatchObject({ settings: { layers }, warnings: [] });
  });

  it.each([
    ['js', { js: true, tls: false, atexit: false }],
    ['tls, atexit', { js: false, tls: true, atexit: true }],
    ['all', all],
    ['none', none],
    ['off', none],
  ])('DEVEXIT_LAYERS=%j', (value, layers) => {
    expect(parseSettings({ DEVEXIT_LAYERS: value })).toMatchObject({ settings: { layers }, warnings: [] });
  });

  it.each([
    ['100', 100, 'DEVEXIT_TIMEOUT_MS=100'],
    [' 100', 100, 'DEVEXIT_TIMEOUT_MS=100'],
    ['0', TIMEOUT_MS_RANGE.max, 'DEVEXIT_TIMEOUT_MS=0'],
    // Leading zeros: still 0, the off value (it was clamped up to 1 ms, the opposite extreme).
    ['00', TIMEOUT_MS_RANGE.max, 'DEVEXIT_TIMEOUT_MS=00'],
    [' 000 ', TIMEOUT_MS_RANGE.max, 'DEVEXIT_TIMEOUT_MS=000'],
    ['0100', 100, 'DEVEXIT_TIMEOUT_MS=0100'],
    ['off', TIMEOUT_MS_RANGE.max, 'DEVEXIT_TIMEOUT_MS=off'],
  ])('DEVEXIT_TIMEOUT_MS=%j is %d ms', (value, ms, source) => {
    expect(parseSettings({ DEVEXIT_TIMEOUT_MS: value })).toMatchObject({
      settings: { timeoutMs: ms, sources: { timeoutMs: source } },
      warnings: [],
    });
  });

  it.each([
    ['', []],
    ['off', []],
    ['none', []],
    ['on', ['SIGINT', 'SIGTERM']],
    ['SIGTERM', ['SIGTERM']],
    [' sigint , TERM,SIGINT', ['SIGINT', 'SIGTERM']],
    ['hup', ['SIGHUP']],
  ])('DEVEXIT_SIGNALS=%j', (value, signals) => {
    expect(parseSettings({ DEVEXIT_SIGNALS: value })).toMatchObject({ settings: { signals }, warnings: [] });
  });

  it('DEVEXIT_SIGNALS naming a signal devexit does not take (SIGKILL, SIGUSR1) is ignored as a whole, with a warning', () => {
    for (const value of ['SIGTERM,SIGKILL', 'SIGUSR1']) {
      const { settings, warnings } = parseSettings({ DEVEXIT_SIGNALS: value });
      expect(settings.signals).toEqual([]);
      expect(warnings).toEqual([
        `devexit: ignoring DEVEXIT_SIGNALS="${value}": expected a comma-separated list of SIGINT, SIGTERM, SIGHUP, or none`,
      ]);
    }
  });

  it('deadlines outside 1..2147483647 ms are clamped, with a warning', () => {
    for (const value of ['2147483648', '10000000000000', '99999999999999999999999']) {
      const { settings, warnings } = parseSettings({ DEVEXIT_TIMEOUT_MS: value });
      expect(settings.timeoutMs).toBe(2147483647);
      expect(warnings).toEqual([
        `devexit: DEVEXIT_TIMEOUT_MS="${value}" is outside 1..2147483647: using 2147483647`,
      ]);
    }
  });

  it('every ignored value warns, naming the setting and what it expects', () => {
    const { settings, warnings } = parseSettings({
      DEVEXIT_TIMEOUT_MS: '1e20',
      DEVEXIT_ON_TIMEOUT: 'later',
      DEVEXIT_REPORT: 'yaml',
      DEVEXIT_GUARD: 'maybe',
      DEVEXIT_LAYERS: 'js,sometimes',
    });
    expect(settings).toEqual(parseSettings({}).settings);
    expect(warnings).toEqual([
      'devexit: ignoring DEVEXIT_TIMEOUT_MS="1e20": expected a whole number in 1..2147483647',
      'devexit: ignoring DEVEXIT_ON_TIMEOUT="later": expected exit or warn',
      'devexit: ignoring DEVEXIT_REPORT="yaml": expected 0, off, false or no; 1, on, true, yes or text; json',
      'devexit: ignoring DEVEXIT_GUARD="maybe": expected 0, off, false or no; 1, on, true or yes',
      'devexit: ignoring DEVEXIT_LAYERS="js,sometimes": expected a comma-separated list of js, tls, atexit or all, or none',
    ]);
  });

  it('DEVEXIT_GUARD=0 wins over DEVEXIT_LAYERS, and says so', () => {
    const { settings, warnings } = parseSettings({ DEVEXIT_GUARD: '0', DEVEXIT_LAYERS: 'js' });
    expect(settings.layers).toEqual(none);
    expect(warnings).toEqual(['devexit: ignoring DEVEXIT_LAYERS: DEVEXIT_GUARD=0 turns every layer off']);
  });

  it('a long value is cut in the warning', () => {
    const { warnings } = parseSettings({ DEVEXIT_ON_TIMEOUT: 'x'.repeat(100_000) });
    expect(warnings[0]!.length).toBeLessThan(160);
  });

  it('the process warns once per value, at first use (child process)', () => {
    const r = spawnSync(
      process.execPath,
      [
        '-e',
        `const core = require('./dist/index.js');
         core.closeAtExit(core.deviceId('cpu', 0), 'q', () => {});
         core.currentConfig(); core.settings();`,
      ],
      {
        cwd: join(__dirname, '..'),
        env: { ...process.env, DEVEXIT_TIMEOUT_MS: '1e20', DEVEXIT_REPORT: 'false' },
        encoding: 'utf8',
        timeout: 20_000,
      },
    );
    expect(r.status).toBe(0);
    expect(r.stderr.match(/DevexitWarning: devexit: ignoring DEVEXIT_TIMEOUT_MS="1e20"/g)).toHaveLength(1);
    // DEVEXIT_REPORT=false is off: no report line.
    expect(r.stderr).not.toMatch(/devexit: ok /);
  });
});
