#!/usr/bin/env node
// The sanitizer jobs: `node tooling/scripts/sanitize.mjs address` (AddressSanitizer +
// UndefinedBehaviorSanitizer, then LeakSanitizer over every native backend's open/close rounds)
// or `... thread` (ThreadSanitizer); `... leak` runs the LeakSanitizer step alone; directories
// after the mode (`... address packages/hip`) run only their suites.
//
// A copy of the workspace (node_modules included, so nothing is installed again) gets every
// native addon rebuilt with DEVEXIT_SANITIZE; then the suites run in it with the sanitizer
// runtime preloaded into node (Node itself is not instrumented; our addons and test doubles
// are). Every child process inherits the preload, and a report makes the process exit with
// code 86: the exit-code assertions of the suites fail on any report. The job also fails if
// any report line appears in the output. The working tree itself is never rebuilt.
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const mode = process.argv[2];
// `sanitize.mjs address packages/hip`: only the suites of the directories named after the mode.
const only = process.argv.slice(3);
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const here = dirname(fileURLToPath(import.meta.url));

// Addons to rebuild (two at a time: none links another's build).
const ADDONS = [
  'packages/native',
  'tooling/standins',
  'packages/cpu',
  'packages/hip',
  'tooling/standins-hip',
  'packages/cuda',
  'tooling/standins-cuda',
  'tooling/example-backend',
];

// What runs under each sanitizer: [package dir, vitest arguments, extra environment?].
// Under ASan: every unit test of the registry, the exit-path matrix of the glibc build (the
// portable build is not rebuilt here), the cpu backend's defect, shutdown, queue and abort suites
// (the shared service layer every native backend uses, through its headers), and the stand-in and
// real-compiler suites (hiprtc, NVRTC) of hip and cuda. Each repeated child runs once (RUNS_CAP)
// instead of 10 to 30 (DEVEXIT_TEST_RUNS): ASan finds a bad access in the run where it happens,
// and the rare races are what the unsanitized passes repeat for (CI: 2 runs, then 2 more with
// every core busy) and what TSan is for; at 3 runs this step took 6.4 min of CI's 25. Left out,
// to keep CI short (Node itself runs several times slower with the ASan runtime preloaded): the
// conformance suites (argument rules and exit rows, the same across backends) and hip's and cuda's
// frees-at-end and Workers suites (the same service layer as cpu's defect suite), which run
// unsanitized; and the real-runtime exit races (exitRace, nvrtcRace, driver, signals), whose
// guard-off arms crash inside the vendor's own uninstrumented teardown, which is what they measure.
const RUNS_CAP = { address: '1', thread: '', leak: '' };
const SUITES = {
  // `leak`: the LeakSanitizer step of `address` alone (an ASan build; no suite).
  leak: [],
  address: [
    ['packages/native', []],
    ['tooling/exit-paths', ['test/exitMatrix.test.ts', 'test/registry.test.ts']],
    // The watchdog's watches and its end of the process (signals, observers, critical sections of
    // Workers), and the Worker machinery over the registry (100 Workers left to the plain run).
    ['tooling/exit-paths', ['test/graceful.test.ts', 'test/workers.test.ts', '-t', '^(?!.*100 Workers)']],
    [
      'packages/cpu',
      [
        'test/defects.test.ts',
        'test/shutdown.test.ts',
        'test/queue.test.ts',
        'test/abort.test.ts',
        'test/userKernel.test.ts',
      ],
    ],
    ['packages/hip', ['test/standin.test.ts', 'test/real.test.ts']],
    ['packages/cuda', ['test/standin.test.ts', 'test/nvrtc.test.ts', 'test/kernels.test.ts']],
  ],
  thread: [
    ['tooling/exit-paths', ['test/registry.test.ts', '-t', 'register (100k|320k) keys']],
    // The watchdog thread against the JS thread's watch and unwatch, and its end of the process.
    [
      'tooling/exit-paths',
      ['test/graceful.test.ts', 'test/workers.test.ts', '-t', 'stuck|never ends|observer'],
      { DEVEXIT_TEST_RUNS: '2' },
    ],
    ['packages/cpu', ['test/defects.test.ts', '-t', 'closeServices\\(\\{ final: false \\}\\)']],
    // shutdown(): the drain on close_async's helper thread while the JS thread takes completions.
    // Its signal and race rows, each child twice (TSan reports a race on a path that ran, whether
    // or not it went wrong there; the close-vs-submit race above keeps its 10).
    [
      'packages/cpu',
      ['test/shutdown.test.ts', '-t', 'queued launches and a pending read|second signal|racing'],
      { DEVEXIT_TEST_RUNS: '2' },
    ],
  ],
};

const REPORT =
  /ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|WARNING: ThreadSanitizer|SUMMARY: (Address|Thread|UndefinedBehavior)Sanitizer/;

if (!(mode in SUITES)) {
  process.stderr.write('usage: node tooling/scripts/sanitize.mjs address|thread|leak [suite directory...]\n');
  process.exit(2);
}
const unknown = only.filter((dir) => !SUITES[mode].some(([d]) => d === dir));
if (unknown.length > 0) {
  const known = [...new Set(SUITES[mode].map(([d]) => d))].join(', ') || 'none';
  process.stderr.write(
    `sanitize ${mode}: no suites for ${unknown.join(', ')}; its suites are in: ${known}\n`,
  );
  process.exit(2);
}

function gccLib(name) {
  const r = spawnSync('gcc', [`-print-file-name=${name}`], { encoding: 'utf8' });
  const path = r.stdout.trim();
  if (r.status !== 0 || !path.startsWith('/') || !existsSync(path)) {
    throw new Error(`the ${name} runtime of gcc is not installed (Debian: the gcc package provides it)`);
  }
  return path;
}

const asan = mode !== 'thread';
const preload = gccLib(asan ? 'libasan.so.8' : 'libtsan.so.2');
const work = mkdtempSync(join(tmpdir(), `devexit-${mode}-`));
process.stdout.write(`sanitize ${mode}: copying the workspace to ${work}\n`);
cpSync(root, work, {
  recursive: true,
  verbatimSymlinks: true,
  filter: (src) => !/[\\/](\.git|\.turbo|bench-results)$/.test(src),
});

// The TSan suites load only the registry, the stand-in runtime and the cpu backend.
const builds = mode === 'thread' ? ADDONS.slice(0, 3) : ADDONS;
const env = { ...process.env, DEVEXIT_SANITIZE: asan ? 'address' : 'thread' };
// Two builds at a time: no addon links another's build (each reads @devexit/native's headers and
// flags only), and most are one or two translation units, which one make -j cannot spread.
const queue = builds.filter((dir) => existsSync(join(work, dir, 'build-from-source.gyp')));
const count = queue.length;
const started = Date.now();
const buildOne = (dir) =>
  new Promise((resolve) => {
    process.stdout.write(`sanitize ${mode}: building ${dir}\n`);
    const child = spawn(process.execPath, [join(work, 'tooling', 'scripts', 'gyp.mjs')], {
      cwd: join(work, dir),
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      out += d;
    });
    child.on('error', (err) => resolve({ dir, code: 1, out: `${out}${err.message}\n` }));
    child.on('close', (code, signal) =>
      resolve({ dir, code: code ?? 1, out: signal ? `${out}killed by ${signal}\n` : out }),
    );
  });
const failures = [];
await Promise.all(
  [0, 1].map(async () => {
    for (let dir = queue.shift(); dir; dir = queue.shift()) {
      const r = await buildOne(dir);
      if (r.code !== 0) failures.push(r);
    }
  }),
);
for (const f of failures) process.stderr.write(`sanitize ${mode}: ${f.dir} did not build:\n${f.out}`);
if (failures.length > 0) process.exit(failures[0].code);
process.stdout.write(
  `sanitize ${mode}: ${count} addons built in ${Math.round((Date.now() - started) / 1000)} s\n`,
);

const suppressions = join(here, `${asan ? 'address' : 'thread'}.supp`);
// AddressSanitizer: into every process, the test runner's workers included (unit tests load the
// addons in-process). ThreadSanitizer: only into the children the suites start (testkit), since
// every suite it runs is a child-process test and the runner's own native bundler is not ours.
const runEnv = {
  ...process.env,
  ...(asan ? { LD_PRELOAD: preload } : { DEVEXIT_TEST_PRELOAD: preload }),
  // Leaks: Node never frees its own heap at exit, and neither do our never-destroyed globals.
  // handle_segv/handle_abort=0: the guard-off controls crash on purpose in vendor code (or a
  // stand-in) and must still end by their signal. use_sigaltstack=0: the LLVM inside ROCm's comgr
  // (hiprtc) installs a malloc'd alternate signal stack of SIGSTKSZ + 64 KiB (79,040 bytes here)
  // on the thread that compiles, our compiler service's; when that thread ended, ASan unmapped the
  // alternate stack it took for its own and died on "failed to deallocate 0x134c0 (79040) bytes"
  // (a CI run; 2 of 4 hip runs on a loaded machine, 0 of 12 with this). With handle_segv=0 ASan
  // has no use for an alternate stack anyway.
  ASAN_OPTIONS:
    'detect_leaks=0:exitcode=86:abort_on_error=0:halt_on_error=1:print_summary=1:handle_segv=0:handle_abort=0:use_sigaltstack=0',
  UBSAN_OPTIONS: 'halt_on_error=1:exitcode=86:print_stacktrace=1',
  TSAN_OPTIONS: `exitcode=86:halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1${existsSync(suppressions) ? `:suppressions=${suppressions}` : ''}`,
};
delete runEnv.DEVEXIT_SANITIZE;
if (RUNS_CAP[mode]) runEnv.DEVEXIT_TEST_RUNS = RUNS_CAP[mode];

let failed = 0;
const summary = [];

// LeakSanitizer over the open/close rounds of each native backend (cpu and the example backend
// real, hip and cuda on their stand-ins; tooling/conformance/fixtures/openCloseChild.cjs, what their openClose tests
// measure as RSS): every closed device service must be freed, so that the process ends with no
// unreachable allocation at all (Node itself leaves none). A service leaked per round is a
// "Direct leak ... new CpuQueue" here. Run alone with `sanitize.mjs leak`.
const LEAK_ROUNDS = ['1000', '100'];
function leakCheck() {
  const standin = (pkg, file) => join(work, 'tooling', pkg, 'build', 'Release', file);
  const backends = [
    ['packages/cpu', {}],
    ['packages/hip', { DEVEXIT_HIP_LIBRARY: standin('standins-hip', 'libamdhip64.so') }],
    ['packages/cuda', { DEVEXIT_CUDA_LIBRARY: standin('standins-cuda', 'libcuda.so.1') }],
    ['tooling/example-backend', {}],
  ];
  const child = join(work, 'tooling', 'conformance', 'fixtures', 'openCloseChild.cjs');
  for (const [dir, extraEnv] of backends) {
    const t0 = performance.now();
    const r = spawnSync(process.execPath, ['--expose-gc', child, join(work, dir), ...LEAK_ROUNDS], {
      cwd: join(work, dir),
      env: {
        ...runEnv,
        ...extraEnv,
        ASAN_OPTIONS: runEnv.ASAN_OPTIONS.replace('detect_leaks=0', 'detect_leaks=1'),
        LSAN_OPTIONS: 'exitcode=87:max_leaks=20',
      },
      encoding: 'utf8',
      maxBuffer: 1 << 26,
    });
    const out = `${r.stdout}${r.stderr}`;
    const leaks = out.split('\n').filter((l) => /^(Direct|Indirect) leak of/.test(l));
    const seconds = ((performance.now() - t0) / 1000).toFixed(0);
    summary.push(
      `${dir} LeakSanitizer over ${LEAK_ROUNDS[0]} open/close rounds: ${leaks.length} leaks; ${seconds} s`,
    );
    if (r.status !== 0 || leaks.length > 0) {
      failed++;
      const log = join(work, `${dir.replace(/\//g, '_')}.leaks.log`);
      writeFileSync(log, out);
      process.stdout.write(`${out.split('\n').slice(0, 40).join('\n')}\nfull output: ${log}\n`);
    }
  }
}
if ((mode === 'address' && only.length === 0) || mode === 'leak') leakCheck();

for (const [dir, args, extraEnv] of SUITES[mode]) {
  if (only.length > 0 && !only.includes(dir)) continue;
  const at = join(work, dir);
  if (!existsSync(join(at, 'package.json'))) continue;
  process.stdout.write(`sanitize ${mode}: ${dir} vitest run ${args.join(' ')}\n`);
  const t0 = performance.now();
  const vitest = join(at, 'node_modules', 'vitest', 'vitest.mjs');
  const r = spawnSync(process.execPath, [vitest, 'run', ...args], {
    cwd: at,
    env: { ...runEnv, ...extraEnv },
    encoding: 'utf8',
    maxBuffer: 1 << 28,
  });
  const out = `${r.stdout}${r.stderr}`;
  process.stdout.write(
    `${out
      .split('\n')
      .filter((l) => / Tests | Test Files |FAIL|✗|×/.test(l))
      .join('\n')}\n`,
  );
  const reports = out.split('\n').filter((l) => REPORT.test(l));
  // biome-ignore lint/suspicious/noControlCharactersInRegex: vitest's ANSI colour codes start with ESC.
  const tests = /Tests\s+(.*)/.exec(out.replace(/\x1b\[[0-9;]*m/g, ''))?.[1]?.trim() ?? 'no summary';
  const seconds = ((performance.now() - t0) / 1000).toFixed(0);
  summary.push(`${dir}: ${tests}; sanitizer reports: ${reports.length}; ${seconds} s`);
  if (r.status !== 0 || reports.length > 0) {
    failed++;
    const log = join(work, `${dir.replace(/\//g, '_')}.log`);
    writeFileSync(log, out);
    // The CI machine's log is gone with it: the first report with what follows it (its stack, the
    // test that was running) goes into the job's output.
    const lines = out.split('\n');
    const first = lines.findIndex((l) => REPORT.test(l));
    const context = first < 0 ? lines.slice(-40) : lines.slice(Math.max(0, first - 10), first + 60);
    process.stdout.write(`${context.join('\n')}\n(${reports.length} report lines) full output: ${log}\n`);
  }
}
process.stdout.write(`sanitize ${mode}: ${summary.join(' | ')}\n`);
if (failed === 0 && !process.env.DEVEXIT_SANITIZE_KEEP) rmSync(work, { recursive: true, force: true });
process.exit(failed === 0 ? 0 : 1);
