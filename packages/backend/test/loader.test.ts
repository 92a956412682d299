import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { addonCandidates, loadAddon } from '../src/loader.js';

describe('the one addon loader', () => {
  it('lists every attempt and the fixes when nothing is there', () => {
    const dir = mkdtempSync(join(tmpdir(), 'devexit-loader-'));
    const spec = { name: 'devexit_nothing', packageDir: dir, envVar: 'DEVEXIT_TEST_NOTHING_ADDON' };
    let message = '';
    try {
      loadAddon(spec);
    } catch (err) {
      message = (err as Error).message;
    }
    for (const path of addonCandidates(spec)) expect(message).toContain(path);
    expect(message).toContain('DEVEXIT_TEST_NOTHING_ADDON');
    expect(message).toMatch(/Fixes:/);
  });

  it('the env override comes first; a file that exists but does not load is an error, not skipped', () => {
    const dir = mkdtempSync(join(tmpdir(), 'devexit-loader-'));
    const bogus = join(dir, 'bogus.node');
    writeFileSync(bogus, 'not an addon');
    process.env.DEVEXIT_TEST_BOGUS_ADDON = bogus;
    try {
      const spec = { name: 'devexit_bogus', packageDir: dir, envVar: 'DEVEXIT_TEST_BOGUS_ADDON' };
      expect(addonCandidates(spec)[0]).toBe(bogus);
      expect(() => loadAddon(spec)).toThrow(/exists but did not load[\s\S]*bogus\.node/);
    } finally {
      delete process.env.DEVEXIT_TEST_BOGUS_ADDON;
    }
  });
});
