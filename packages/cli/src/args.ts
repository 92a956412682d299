import { parseArgs } from 'node:util';
import { BACKEND_NAMES } from './backends.js';

export const USAGE = `usage: devexit <command> [options]

commands:
  doctor    the platform, which exit layers are armed, each backend's availability
            (doctor run -- <command>: how a program ended, and what devexit did at its exit)
  demo      programs whose device service is inside a vendor runtime when they exit, by four
            paths, with devexit and without: crashes without it, none with it
  help      this text, or a command's (devexit help demo)

options:
  -h, --help     show help (also after a command: devexit demo --help)
  --version      print the version of @devexit/cli
`;

export const DOCTOR_USAGE = `usage: devexit doctor [--json]
       devexit doctor run [--json] [--timeout MS] [--exit-timeout MS] [--timeline FILE] -- <command> [args...]

Prints the platform and libc, whether @devexit/native loads, which exit layers are enabled and
armed, the close deadline, and for each backend (${BACKEND_NAMES.join(', ')}) whether it is installed
and available here, with the reason when it is not.

options:
  --json         the report as JSON on stdout
  -h, --help     show this help

Exit status: 0 when nothing is wrong; 1 when @devexit/native is missing or fails to load, or a
backend named in DEVEXIT_REQUIRE_BACKENDS (comma-separated) is unavailable; 2 on bad usage.

devexit doctor run: runs the command (a .js, .cjs or .mjs file runs with this Node) and tells how
it ended: its exit code or signal, whether it crashed or hung, and whether that happened after it
began to exit; which closes devexit ran and how long each took (DEVEXIT_REPORT=json is set for
it); which exit layers were armed in each Node process it started (a --require preload in
NODE_OPTIONS reports them; it loads nothing of devexit itself). Its own output passes through.

  --json              the report as JSON on stdout (the program's stdout then goes to stderr)
  --timeout MS        kill it (its whole process group) past MS ms in all (default 60000)
  --exit-timeout MS   kill it when it is still running MS ms after it began to exit: "hung at
                      exit" (default 10000)
  --timeline FILE     draw the exit: each close a bar per device and service against the
                      deadline, the layer it ran in, what started the exit, how it ended
                      (FILE.svg: the picture; FILE.html: a page with the report beside it)

It reads the program's output as it streams (whatever its size) and keeps only the report lines
and the last 64 KiB of its stderr; it ends when the program exits, even if a process the program
started still holds its output open. Lines that begin "devexit:report " but are not a close
report are ignored and named in the verdict.

Exit status: 0 when it neither crashed nor hung (whatever its own exit code); 1 when it crashed
or hung; 2 on bad usage; 127 when the command could not be started (verdict "not-started").
`;

/** Runs per exit path and mode: enough for a race that crashes a third of the time to show. */
export const DEMO_DEFAULT_RUNS = 6;

export const DEMO_USAGE = `usage: devexit demo [--runs N] [--backend NAME]... [--timeline FILE | --no-timeline] [--verbose] [--json]

Runs child programs whose device service is still calling the vendor runtime when they exit,
by four paths (natural end, process.exit(), an uncaught exception, a SIGINT handler), each with
devexit and without it (DEVEXIT_GUARD=0), and tabulates how they ended. By default: hip and cuda,
whose compiler services race the runtime's exit teardown without a GPU: on the real runtime where
it is installed (ROCm's libamdhip64, NVRTC), else on a stand-in (a test double, named "stand-in"
in its rows; the repository has them), else the real cpu and wgpu backends. One exit of the first
of them is drawn, with devexit and without (an HTML page; its path is printed).
Progress goes to stderr, the table (or JSON) to stdout.

options:
  --runs N          runs per path and mode, 1 to 1000 (default ${DEMO_DEFAULT_RUNS})
  --backend NAME    ${BACKEND_NAMES.join(', ')}; repeat or separate with commas (cpu, wgpu: their
                    queue kept busy; their runtimes do not crash at exit)
  --timeline FILE   where to write the page of the drawn exit (default: a temporary folder)
  --no-timeline     draw nothing
  --verbose         progress for every exit path, and the first error line of each failing cell
  --json            the results as JSON on stdout
  -h, --help        show this help

Exit status: 0 when every run with devexit ended as its path asks (no crash, no hang); 1 when one
did not, no backend could run, or a backend named with --backend could not; 2 on bad usage.
`;

export type Command =
  | { kind: 'help'; text: string }
  | { kind: 'version' }
  | { kind: 'usage-error'; command?: string; message: string; usage: string }
  | { kind: 'doctor'; json: boolean }
  | {
      kind: 'doctor-run';
      json: boolean;
      timeoutMs: number;
      exitTimeoutMs: number;
      timeline: string | undefined;
      command: string[];
    }
  | {
      kind: 'demo';
      json: boolean;
      verbose: boolean;
      runs: number;
      backends: string[] | undefined;
      timeline: string | false | undefined;
    };

const HELP = { help: { type: 'boolean', short: 'h' } } as const;
const USAGES: Record<string, string> = { doctor: DOCTOR_USAGE, demo: DEMO_USAGE };

/** Rewords node:util parseArgs errors (which suggest '--' for unknown options) in our terms. */
function parseError(err: unknown): string {
  const e = err as { code?: string; message?: string };
  const quoted = /'([^']+)'/.exec(e.message ?? '')?.[1];
  switch (e.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `unknown option ${quoted ?? ''}`.trim();
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return `unexpected argument ${JSON.stringify(quoted ?? '')}`;
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      return (e.message ?? 'invalid option value').replace(/^Option /, 'option ');
    default:
      throw err;
  }
}

/** Parses `devexit …` arguments (without node and the script). Never throws for user input. */
export function parseCommandLine(argv: string[]): Command {
  const at = argv.findIndex((a) => !a.startsWith('-'));
  const globalArgs = at < 0 ? argv : argv.slice(0, at);
  const command = at < 0 ? undefined : argv[at];
  const rest = at < 0 ? [] : argv.slice(at + 1);

  let global: { help?: boolean; version?: boolean };
  try {
    global = parseArgs({
      args: globalArgs,
      options: { ...HELP, version: { type: 'boolean' } },
      strict: true,
    }).values;
  } catch (err) {
    return { kind: 'usage-error', message: parseError(err), usage: USAGE };
  }
  if (global.help) return { kind: 'help', text: USAGE };
  if (global.version) return { kind: 'version' };
  if (command === undefined) return { kind: 'usage-error', message: 'no command given', usage: USAGE };

  const result = parseCommand(command, rest);
  // Errors inside a known command name it: "devexit demo: unknown backend …".
  if (result.kind === 'usage-error' && USAGES[command]) return { ...result, command };
  return result;
}

function parseCommand(command: string, rest: string[]): Command {
  try {
    switch (command) {
      case 'help': {
        const { positionals } = parseArgs({
          args: rest,
          options: HELP,
          allowPositionals: true,
          strict: true,
        });
        const topic = positionals[0];
        if (positionals.length > 1 || (topic !== undefined && !USAGES[topic])) {
          return {
            kind: 'usage-error',
            message: `no help for ${JSON.stringify(positionals.join(' '))}`,
            usage: USAGE,
          };
        }
        return { kind: 'help', text: topic ? (USAGES[topic] ?? USAGE) : USAGE };
      }
      case 'doctor': {
        if (rest[0] === 'run') return parseDoctorRun(rest.slice(1));
        const { values } = parseArgs({
          args: rest,
          options: { ...HELP, json: { type: 'boolean' } },
          strict: true,
        });
        if (values.help) return { kind: 'help', text: DOCTOR_USAGE };
        return { kind: 'doctor', json: values.json === true };
      }
      case 'demo':
        return parseDemo(rest);
      default:
        return { kind: 'usage-error', message: `unknown command ${JSON.stringify(command)}`, usage: USAGE };
    }
  } catch (err) {
    return { kind: 'usage-error', message: parseError(err), usage: USAGES[command] ?? USAGE };
  }
}

/** `doctor run [options] -- command...`: options end at `--` or at the first non-option. */
function parseDoctorRun(args: string[]): Command {
  const dash = args.indexOf('--');
  let at = dash;
  if (at < 0) {
    // Without `--`: the first argument that is neither an option nor an option's value.
    at = args.length;
    for (let i = 0; i < args.length; i++) {
      const a = args[i] as string;
      if (a === '--timeout' || a === '--exit-timeout' || a === '--timeline') i++;
      else if (!a.startsWith('-')) {
        at = i;
        break;
      }
    }
  }
  const own = args.slice(0, at);
  const command = args.slice(dash >= 0 ? dash + 1 : at);
  const { values } = parseArgs({
    args: own,
    options: {
      ...HELP,
      json: { type: 'boolean' },
      timeout: { type: 'string' },
      'exit-timeout': { type: 'string' },
      timeline: { type: 'string' },
    },
    strict: true,
  });
  if (values.help) return { kind: 'help', text: DOCTOR_USAGE };
  const bad = (message: string): Command => ({ kind: 'usage-error', message, usage: DOCTOR_USAGE });
  const ms = (value: string | undefined, name: string, fallback: number): number | string => {
    if (value === undefined) return fallback;
    if (!/^[1-9][0-9]{0,9}$/.test(value) || Number(value) > 2147483647)
      return `--${name} must be a whole number of ms from 1 to 2147483647; got ${JSON.stringify(value)}`;
    return Number(value);
  };
  const timeoutMs = ms(values.timeout, 'timeout', 60_000);
  if (typeof timeoutMs === 'string') return bad(timeoutMs);
  const exitTimeoutMs = ms(values['exit-timeout'], 'exit-timeout', 10_000);
  if (typeof exitTimeoutMs === 'string') return bad(exitTimeoutMs);
  const timeline = values.timeline;
  if (timeline !== undefined && !/\.(svg|html?)$/i.test(timeline))
    return bad(`--timeline must name a .svg or .html file; got ${JSON.stringify(timeline)}`);
  if (command.length === 0 || command[0] === '')
    return bad('run: no command given (devexit doctor run -- node app.js)');
  return { kind: 'doctor-run', json: values.json === true, timeoutMs, exitTimeoutMs, timeline, command };
}

function parseDemo(args: string[]): Command {
  const { values } = parseArgs({
    args,
    options: {
      ...HELP,
      json: { type: 'boolean' },
      runs: { type: 'string' },
      backend: { type: 'string', multiple: true },
      timeline: { type: 'string' },
      'no-timeline': { type: 'boolean' },
      verbose: { type: 'boolean' },
    },
    strict: true,
  });
  if (values.help) return { kind: 'help', text: DEMO_USAGE };
  const bad = (message: string): Command => ({ kind: 'usage-error', message, usage: DEMO_USAGE });
  let runs = DEMO_DEFAULT_RUNS;
  if (values.runs !== undefined) {
    if (!/^[1-9][0-9]{0,3}$/.test(values.runs) || Number(values.runs) > 1000) {
      return bad(`--runs must be an integer from 1 to 1000; got ${JSON.stringify(values.runs)}`);
    }
    runs = Number(values.runs);
  }
  let backends: string[] | undefined;
  if (values.backend) {
    backends = [];
    for (const name of values.backend.flatMap((b) => b.split(',')).map((b) => b.trim())) {
      if (!(BACKEND_NAMES as readonly string[]).includes(name)) {
        return bad(`unknown backend ${JSON.stringify(name)} (known: ${BACKEND_NAMES.join(', ')})`);
      }
      if (!backends.includes(name)) backends.push(name);
    }
  }
  if (values.timeline !== undefined && values['no-timeline'])
    return bad('--timeline and --no-timeline together');
  if (values.timeline !== undefined && !/\.html?$/i.test(values.timeline))
    return bad(`--timeline must name an .html file; got ${JSON.stringify(values.timeline)}`);
  return {
    kind: 'demo',
    json: values.json === true,
    verbose: values.verbose === true,
    runs,
    backends,
    timeline: values['no-timeline'] ? false : values.timeline,
  };
}
