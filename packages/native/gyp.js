// Compiler and linker flags every devexit addon needs, in one place. A binding.gyp reads them
// with command expansion, e.g.
//   "defines":   ["<!@(node -p \"require('@devexit/native/gyp').defines\")"],
//   "cflags_cc": ["<!@(node -p \"require('@devexit/native/gyp').cflags_cc\")"],
// Plain JS (not built from src/) so that it works before this package is built.
//
// DEVEXIT_SANITIZE=address (AddressSanitizer + UndefinedBehaviorSanitizer) or =thread builds for
// the sanitizer jobs; load such an addon with LD_PRELOAD of libasan.so / libtsan.so.
// DEVEXIT_PORTABLE=1 compiles the glibc-only exit layers out (the main-thread TLS guard, on_exit):
// on Linux it builds what musl, macOS and Windows get, so that CI can test it.
const { join, relative } = require('node:path');

const linux = process.platform === 'linux';
const sanitize = process.env.DEVEXIT_SANITIZE || '';
const sanitizerFlags = {
  '': [],
  address: [
    '-fsanitize=address,undefined',
    '-fno-sanitize-recover=undefined',
    '-fno-omit-frame-pointer',
    '-g',
  ],
  thread: ['-fsanitize=thread', '-fno-omit-frame-pointer', '-g'],
}[sanitize];
if (!sanitizerFlags) {
  throw new Error(`devexit: DEVEXIT_SANITIZE must be address or thread; got ${JSON.stringify(sanitize)}`);
}
const portable = /^(1|on|true)$/i.test(process.env.DEVEXIT_PORTABLE || '');
const optimise = sanitize ? ['-O1'] : ['-O2'];
const common = [
  '-fvisibility=hidden',
  '-Wall',
  '-Wextra',
  '-Wno-unused-parameter',
  ...optimise,
  ...sanitizerFlags,
];

/** The registry addon's own sources, for its binding.gyp and for test builds of it (relative to
 * the directory gyp runs in: gyp makes object paths from them). */
const sources = [
  'binding.cc',
  'close_engine.cc',
  'close_job.cc',
  'guard.cc',
  'platform.cc',
  'registry.cc',
  'report.cc',
  'settings.cc',
  'watchdog.cc',
]
  .map((f) => relative(process.cwd(), join(__dirname, 'addon', f)))
  .join(' ');

/** node-addon-api with C++ exceptions: every exception becomes a JS error, and none is thrown
 * into an environment that is shutting down (it would abort the process). */
const defines = [
  'NAPI_VERSION=8',
  'NAPI_CPP_EXCEPTIONS',
  'NODE_ADDON_API_CPP_EXCEPTIONS_ALL',
  'NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS',
  'NODE_ADDON_API_DISABLE_DEPRECATED',
  ...(portable ? ['DEVEXIT_PORTABLE=1'] : []),
].join(' ');
const cflags = common.join(' ');
const cflags_cc = ['-std=c++17', '-fexceptions', ...common].join(' ');
/** -z nodelete: Node dlcloses addons first loaded by a Worker when it ends, while their service
 * threads may still run. -Bsymbolic-functions: the addon's calls to its own functions stay in the
 * addon. The node executable exports its copies of libstdc++ templates (shared_ptr's
 * _M_release, ...), which would otherwise take those calls over: built by another compiler in
 * official Node builds, and uninstrumented under a sanitizer (ThreadSanitizer then misses every
 * shared_ptr release and reports the sink's deletion as a race). */
const ldflags = [
  ...(linux ? ['-Wl,-z,nodelete', '-Wl,-Bsymbolic-functions'] : []),
  '-pthread',
  ...sanitizerFlags,
].join(' ');
const libraries = linux ? '-ldl' : '';
const include_dirs = [require('node-addon-api').include_dir, join(__dirname, 'include')].join(' ');
const version = require('./package.json').version;

// Shorthand properties only: Node can then see the names when ESM imports them.
module.exports = {
  defines,
  cflags,
  cflags_cc,
  ldflags,
  libraries,
  include_dirs,
  sanitize,
  portable,
  sources,
  version,
};
