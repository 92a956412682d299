import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { parseReportLines } from '@devexit/core';
import { describe, expect, it } from 'vitest';

// The JS exit layer alone (no @devexit/native), in child processes. The same paths with native
// services and the crash-reproducing runtime are rows of tooling/exit-paths.
const run = (code: string, env: Record<string, string> = {}) =>
  spawnSync(process.execPath, ['-e', code], {
    env: { ...process.env, DEVEXIT_REPORT: 'json', ...env },
    encoding: 'utf8',
    cwd: join(__dirname, '..'),
    timeout: 20_000,
  });

const setup = `
  const core = require('./dist/index.js');
  const mark = (t) => process.stderr.write(t + '\\n');
  const close = (name, fn = () => {}) =>
    core.closeAtExit(core.deviceId('wgpu', 0), name, () => { mark('close ' + name); return fn(); });
`;

const marks = (stderr: string) => stderr.split('\n').filter((l) => /^(close|listener) /.test(l));

describe('the JS exit layer (child processes, 5 runs each)', () => {
  const cases: [string, string, number, string[]][] = [
    [
      "an 'exit' listener added before devexit that exits: the closes run first",
      `process.on('exit', () => { mark('listener'); process.exit(3); }); ${setup} close('a'); process.exit(0);`,
      3,
      ['close a', 'listener '],
    ],
    [
      "an 'exit' listener added before devexit that throws: the closes run first",
      `process.on('exit', () => { mark('listener'); throw new Error('from the listener'); }); ${setup} close('a'); process.exit(2);`,
      2,
      ['close a', 'listener '],
    ],
    [
      'a listener prepended after devexit loaded: the closes still run first',
      `${setup} close('a'); process.prependListener('exit', () => mark('listener ')); process.exit(4);`,
      4,
      ['close a', 'listener '],
    ],
    [
      'process.reallyExit(4) runs the JS closes',
      `${setup} close('a'); process.reallyExit(4);`,
      4,
      ['close a'],
    ],
    [
      'a close that calls process.exit(5) does not skip the closes after it; its code wins',
      `${setup} close('c'); close('b'); close('a', () => process.exit(5)); process.exit(3);`,
      5,
      ['close a', 'close b', 'close c'],
    ],
    [
      'a close that calls process.exit(5) inside closeServices(): the rest still run',
      `${setup} close('b'); close('a', () => process.exit(5)); core.closeServices();`,
      5,
      ['close a', 'close b'],
    ],
  ];
  for (const [name, code, status, expected] of cases) {
    it(name, () => {
      for (let i = 0; i < 5; i++) {
        const r = run(code.replace("mark('listener')", "mark('listener ')"));
        expect({ status: r.status, signal: r.signal }, r.stderr).toEqual({ status, signal: null });
        expect(marks(r.stderr)).toEqual(expected);
      }
    });
  }

  it('the same with the JS layer disabled (DEVEXIT_LAYERS=tls,atexit): no close runs (the control)', () => {
    // closeServices() is not an exit layer: it closes whatever the layers say.
    for (const [, code] of cases.filter(([name]) => !name.includes('closeServices'))) {
      const r = run(code, { DEVEXIT_LAYERS: 'tls,atexit' });
      expect(r.signal).toBe(null);
      expect(marks(r.stderr).filter((m) => m.startsWith('close'))).toEqual([]);
    }
  });

  it('says so when a hook cannot be installed, and the other hooks still close', () => {
    const r = run(`
      Object.defineProperty(process, 'reallyExit', { value: process.reallyExit, writable: false });
      ${setup} close('a'); setTimeout(() => process.exit(3), 10);`);
    expect(r.status).toBe(3);
    expect(r.stderr.match(/DevexitWarning: devexit: could not hook process\.reallyExit/g)).toHaveLength(1);
    expect(marks(r.stderr)).toEqual(['close a']);
  });

  it('a close returning a rejected promise: an error in the report, no unhandled rejection, code kept', () => {
    for (const where of ['process.exit(6)', 'core.closeServices(); setTimeout(() => process.exit(6), 50)']) {
      const r = run(
        `${setup} close('async', async () => { throw new Error('rejected (expected)'); }); ${where};`,
      );
      expect(r.status, r.stderr).toBe(6);
      expect(r.stderr).not.toMatch(/rejected \(expected\)/);
      const entry = parseReportLines(r.stderr).find((e) => e.service === 'async');
      if (where === 'process.exit(6)') {
        expect(entry).toMatchObject({ outcome: 'error', layer: 'js-exit' });
        expect(entry?.error).toMatch(/^the close returned a promise: closes run synchronously at exit/);
      } else {
        expect(r.stderr).toMatch(
          /ServiceCloseError|devexit: closing wgpu:0\/async failed: the close returned a promise/,
        );
      }
    }
  });
});
