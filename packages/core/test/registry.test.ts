import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import {
  closeAtExit,
  closeServices,
  configure,
  DevexitError,
  deviceId,
  deviceType,
  deviceTypeName,
  forgetClose,
  formatReportLine,
  getCloseReport,
  isExiting,
  parseReportLines,
  ServiceCloseError,
} from '../src/index.js';

// This file runs in its own fork (vitest forks pool), without @devexit/native: the JS-only mode.
describe('@devexit/core without native', () => {
  it('device types: built-ins are fixed, other names distinct', () => {
    expect(deviceType('cpu')).toBe(1);
    expect(deviceType('cuda')).toBe(2);
    expect(deviceType('hip')).toBe(3);
    expect(deviceType('wgpu')).toBe(4);
    const x = deviceType('vendor-x');
    expect(x).toBeGreaterThanOrEqual(16);
    expect(deviceType('vendor-x')).toBe(x);
    expect(deviceType('vendor-y')).not.toBe(x);
    expect(deviceTypeName(x)).toBe('vendor-x');
    expect(deviceId('cuda', 0)).not.toEqual(deviceId('hip', 0));
  });

  it('bad input throws a TypeError naming the argument', () => {
    const dev = deviceId('cpu', 0);
    expect(() => deviceId('cpu', -1)).toThrow(/device\.index must be an integer in 0\.\.4294967295; got -1/);
    expect(() => deviceId('cpu', 1.5)).toThrow(RangeError);
    expect(() => deviceId('cpu', 2 ** 32)).toThrow(/device\.index/);
    expect(() => deviceId('', 0)).toThrow(/backendName must be a non-empty name/);
    expect(() => closeAtExit(dev, '', () => {})).toThrow(/serviceType must be a non-empty name/);
    expect(() => closeAtExit(dev, 'queue', 'nope' as never)).toThrow(/close must be a function; got "nope"/);
    expect(() => closeAtExit({ type: 0, index: 0 }, 'queue', () => {})).toThrow(
      /device\.type must be an integer in 1\.\.65535/,
    );
    expect(() => closeAtExit(null as never, 'queue', () => {})).toThrow(/device must be a DeviceId/);
    expect(() => configure({ timeoutMs: 0 })).toThrow(/timeoutMs must be an integer/);
    expect(() => configure({ onTimeout: 'later' as never })).toThrow(
      /onTimeout must be 'exit' or 'warn'; got "later"/,
    );
    expect(() => closeServices(null as never)).toThrow(TypeError);
  });

  it('registers once per key, closes last-registered-first, reports failures and runs the rest', () => {
    const dev = deviceId('cpu', 7);
    const order: string[] = [];
    expect(closeAtExit(dev, 'a', () => order.push('a'))).toBe(true);
    expect(closeAtExit(dev, 'a', () => order.push('a-second'))).toBe(false);
    expect(
      closeAtExit(dev, 'b', () => {
        throw new Error('b broke');
      }),
    ).toBe(true);
    expect(closeAtExit(dev, 'c', () => order.push('c'))).toBe(true);
    expect(closeAtExit(deviceId('cpu', 8), 'gone', () => order.push('gone'))).toBe(true);
    expect(forgetClose(deviceId('cpu', 8), 'gone')).toBe(true);
    expect(forgetClose(deviceId('cpu', 8), 'gone')).toBe(false);

    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const report = closeServices();
    expect(order).toEqual(['c', 'a']);
    expect(report.map((e) => [e.service, e.outcome, e.layer])).toEqual([
      ['c', 'ok', 'explicit'],
      ['b', 'error', 'explicit'],
      ['a', 'ok', 'explicit'],
    ]);
    expect(report[1]?.error).toBe('b broke');
    expect(warn).toHaveBeenCalledTimes(1);
    const warning = warn.mock.calls[0]?.[0];
    expect(warning).toBeInstanceOf(ServiceCloseError);
    expect((warning as ServiceCloseError).message).toBe('devexit: closing cpu:7/b failed: b broke');
    expect((warning as ServiceCloseError).device).toEqual(dev);
    expect(getCloseReport()).toHaveLength(3);

    // closeServices() is final by default: later services are refused with a typed error.
    expect(isExiting()).toBe(true);
    let err: unknown;
    try {
      closeAtExit(dev, 'late', () => {});
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(DevexitError);
    expect((err as DevexitError).code).toBe('ERR_DEVEXIT_EXITING');
  });

  it('report lines round-trip through the stderr format', () => {
    const entry = {
      device: { type: 'cpu', typeId: 1, index: 0 },
      service: 'queue',
      layer: 'tls',
      ms: 1.25,
      outcome: 'ok' as const,
      pid: 1,
    };
    expect(formatReportLine(entry, 'text')).toBe('devexit: ok cpu:0/queue in 1.25 ms (tls)');
    expect(parseReportLines(`noise\n${formatReportLine(entry, 'json')}\n`)).toEqual([entry]);
  });
});

describe('the JS exit layer alone (child processes)', () => {
  const run = (code: string, env: Record<string, string> = {}) =>
    spawnSync(process.execPath, ['-e', code], {
      env: { ...process.env, ...env, DEVEXIT_REPORT: 'json' },
      encoding: 'utf8',
      cwd: join(__dirname, '..'),
      timeout: 20_000,
    });
  const script = (exit: string) => `
    const core = require('./dist/index.js');
    core.closeAtExit(core.deviceId('wgpu', 0), 'queue', () => process.stderr.write('closed wgpu:0\\n'));
    core.closeAtExit(core.deviceId('wgpu', 1), 'queue', () => { throw new Error('nope'); });
    ${exit}`;

  for (const [name, exit, code] of [
    ['natural end', '', 0],
    ['process.exit(4)', 'process.exit(4)', 4],
    ['uncaught exception', 'setTimeout(() => { throw new Error("x") }, 1)', 1],
  ] as const) {
    it(`${name}: every JS close runs once in the 'exit' event, failures go to stderr`, () => {
      for (let i = 0; i < 5; i++) {
        const r = run(script(exit));
        expect({ status: r.status, signal: r.signal }).toEqual({ status: code, signal: null });
        expect(r.stderr.match(/closed wgpu:0/g)).toHaveLength(1);
        expect(r.stderr).toContain('devexit: close of wgpu:1/queue failed: nope');
        expect(
          parseReportLines(r.stderr).map((e) => `${e.device.type}:${e.device.index} ${e.outcome} ${e.layer}`),
        ).toEqual(['wgpu:0 ok js-exit', 'wgpu:1 error js-exit']);
      }
    });
  }

  it('DEVEXIT_GUARD=0 disables the JS layer (the control)', () => {
    const r = run(script(''), { DEVEXIT_GUARD: '0' });
    expect(r.status).toBe(0);
    expect(r.stderr).not.toContain('closed wgpu:0');
  });

  it('a worker exiting closes only what the worker registered', () => {
    const r = run(`
      const { Worker } = require('node:worker_threads');
      const core = require('./dist/index.js');
      core.closeAtExit(core.deviceId('wgpu', 0), 'queue', () => process.stderr.write('main close\\n'));
      const w = new Worker("const core = require('./dist/index.js'); core.closeAtExit(core.deviceId('wgpu', 5), 'queue', () => process.stderr.write('worker close\\\\n')); process.exit(0);", { eval: true });
      w.on('exit', () => process.stderr.write('worker gone, main exiting=' + core.isExiting() + '\\n'));
    `);
    expect(r.status).toBe(0);
    const lines = r.stderr.split('\n').filter((l) => /close$|worker gone/.test(l));
    expect(lines).toEqual(['worker close', 'worker gone, main exiting=false', 'main close']);
  });
});
