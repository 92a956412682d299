import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliPackage, cliRoot, run, STACK_LINE, show } from './helpers.js';

describe('devexit: help, version, usage errors', () => {
  it.each([
    [['--help'], 'usage: devexit <command>'],
    [['-h'], 'usage: devexit <command>'],
    [['help'], 'usage: devexit <command>'],
    [['doctor', '--help'], 'usage: devexit doctor [--json]'],
    [['doctor', '-h'], 'usage: devexit doctor [--json]'],
    [['demo', '--help'], 'usage: devexit demo [--runs N]'],
    [['demo', '--runs', '2', '-h'], 'usage: devexit demo [--runs N]'],
    [['help', 'demo'], 'usage: devexit demo [--runs N]'],
  ])('%j prints help on stdout and exits 0', (args, first) => {
    const r = run(args);
    expect(r.status, show(r)).toBe(0);
    expect(r.stdout.startsWith(first), show(r)).toBe(true);
    expect(r.stderr).toBe('');
  });

  it('--version prints the package version alone on stdout', () => {
    const r = run(['--version']);
    expect(r.status, show(r)).toBe(0);
    expect(r.stdout).toBe(`${cliPackage.version}\n`);
    expect(r.stderr).toBe('');
  });

  it.each([
    [[], 'devexit: no command given', 'usage: devexit <command>'],
    [['--bogus'], 'devexit: unknown option --bogus', 'usage: devexit <command>'],
    [['-x'], 'devexit: unknown option -x', 'usage: devexit <command>'],
    [['frobnicate'], 'devexit: unknown command "frobnicate"', 'usage: devexit <command>'],
    [['help', 'frobnicate'], 'devexit: no help for "frobnicate"', 'usage: devexit <command>'],
    [['doctor', '--bogus'], 'devexit doctor: unknown option --bogus', 'usage: devexit doctor'],
    [['doctor', 'extra'], 'devexit doctor: unexpected argument "extra"', 'usage: devexit doctor'],
    [['demo', '--bogus'], 'devexit demo: unknown option --bogus', 'usage: devexit demo'],
    [
      ['demo', '--backend', 'foo'],
      'devexit demo: unknown backend "foo" (known: cpu, cuda, hip, wgpu)',
      'usage: devexit demo',
    ],
    [['demo', '--backend', 'cpu,foo'], 'devexit demo: unknown backend "foo"', 'usage: devexit demo'],
    [
      ['demo', '--runs', 'many'],
      'devexit demo: --runs must be an integer from 1 to 1000; got "many"',
      'usage',
    ],
    [['demo', '--runs', '0'], 'devexit demo: --runs must be an integer from 1 to 1000; got "0"', 'usage'],
    [
      ['demo', '--runs', '1001'],
      'devexit demo: --runs must be an integer from 1 to 1000; got "1001"',
      'usage',
    ],
    [['demo', '--runs'], "devexit demo: option '--runs <value>' argument missing", 'usage'],
  ])(
    '%j is a usage error: exit 2, message and usage on stderr, nothing on stdout, nothing run',
    (args, message, usage) => {
      const r = run(args);
      expect(r.status, show(r)).toBe(2);
      expect(r.stderr.split('\n')[0]?.startsWith(message), show(r)).toBe(true);
      expect(r.stderr, show(r)).toContain(usage);
      expect(r.stdout).toBe('');
      // No run started: the progress lines of demo never appear.
      expect(r.stderr).not.toMatch(/run\(s\) with devexit/);
      expect(r.stderr).not.toMatch(STACK_LINE);
    },
  );
});

describe('what installing @devexit/cli pulls', () => {
  it('depends on core only; native is a peer, every backend an optional peer; no test doubles', () => {
    expect(Object.keys(cliPackage.dependencies ?? {})).toEqual(['@devexit/core']);
    expect(cliPackage.optionalDependencies).toBeUndefined();
    const peers = cliPackage.peerDependencies ?? {};
    expect(Object.keys(peers).sort()).toEqual([
      '@devexit/cpu',
      '@devexit/cuda',
      '@devexit/hip',
      '@devexit/native',
      '@devexit/wgpu',
    ]);
    for (const b of ['@devexit/cpu', '@devexit/cuda', '@devexit/hip', '@devexit/wgpu']) {
      expect(cliPackage.peerDependenciesMeta?.[b]?.optional, b).toBe(true);
    }
    expect(cliPackage.peerDependenciesMeta?.['@devexit/native']).toBeUndefined();
  });

  it('the published files load no test double: only the demo looks for a stand-in, optionally', () => {
    const files = [
      ...readdirSync(join(cliRoot, 'dist'))
        .filter((f) => f.endsWith('.js'))
        .map((f) => join(cliRoot, 'dist', f)),
      ...readdirSync(join(cliRoot, 'fixtures')).map((f) => join(cliRoot, 'fixtures', f)),
    ];
    expect(files.length).toBeGreaterThan(3);
    const mentions = files.filter((f) => /@devexit\/(testkit|standins)/.test(readFileSync(f, 'utf8')));
    expect(mentions.map((f) => f.slice(cliRoot.length + 1))).toEqual(['dist/demoTargets.js']);
    // There, a require that may fail (in a published install the stand-ins are not there).
    const source = readFileSync(join(cliRoot, 'dist', 'demoTargets.js'), 'utf8');
    expect(source).toMatch(/try \{\s+const exports = require\(module\)/);
    for (const field of ['dependencies', 'peerDependencies', 'optionalDependencies'] as const) {
      expect(
        Object.keys(cliPackage[field] ?? {}).filter((n) => /standins|testkit/.test(n)),
        field,
      ).toEqual([]);
    }
  });
});
