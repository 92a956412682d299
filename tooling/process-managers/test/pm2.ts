import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { childEnv, statState } from '@devexit/testkit';

// One PM2 daemon of its own per test, driven through PM2's CLI as a user would: PM2_HOME is a
// fresh temporary folder (socket, pid file, logs), and kill() ends the daemon and everything it
// started, checking that nothing survived.

const PM2_BIN = join(dirname(require.resolve('pm2/package.json')), 'bin', 'pm2');
const LOG_DATE_FORMAT = 'YYYY-MM-DDTHH:mm:ss.SSS';
const STAMP = '(\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}): PM2 log: ';

/** Is `pid` running (a zombie is not)? */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return statState(readFileSync(`/proc/${pid}/stat`, 'utf8')) !== 'Z';
  } catch {
    return false;
  }
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

export interface Pm2App {
  name: string;
  script: string;
  exec_mode: 'fork' | 'cluster';
  kill_timeout: number;
  env: Record<string, string>;
}

export interface Pm2Process {
  name: string;
  pid: number;
  pm2_env: { status: string; exit_code?: number; restart_time: number };
}

export class Pm2Daemon {
  readonly home = mkdtempSync(join(tmpdir(), 'devexit-pm2-'));

  /**
   * The CLI's environment, which PM2 also gives the apps it starts: the test's, without devexit's
   * variables (an app gets them from its ecosystem entry only), PM2's update check off.
   */
  private env() {
    return childEnv({
      PM2_HOME: this.home,
      PM2_DISCRETE_MODE: 'true', // no banner, no first-run version check
      PM2_DISABLE_VERSION_CHECK: 'true',
      // The daemon's log lines with milliseconds: how long a stop took, from PM2's side.
      PM2_LOG_DATE_FORMAT: LOG_DATE_FORMAT,
      DEVEXIT_SIGNALS: undefined,
      DEVEXIT_TIMEOUT_MS: undefined,
    });
  }

  /** Runs `pm2 <args>`; a CLI that hangs is killed past `timeoutMs`. */
  cli(args: string[], timeoutMs = 60_000): Promise<CliResult> {
    const start = performance.now();
    return new Promise((resolve) => {
      execFile(
        process.execPath,
        [PM2_BIN, ...args],
        { env: this.env(), timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 16 << 20 },
        (err, stdout, stderr) => {
          const code = err ? (typeof err.code === 'number' ? err.code : null) : 0;
          resolve({ code, stdout, stderr, ms: performance.now() - start });
        },
      );
    });
  }

  async must(args: string[], timeoutMs?: number): Promise<CliResult> {
    const r = await this.cli(args, timeoutMs);
    if (r.code !== 0) throw new Error(`pm2 ${args.join(' ')}: code ${r.code}\n${r.stdout}\n${r.stderr}`);
    return r;
  }

  /** Starts the daemon (`pm2 ping` launches it): two CLIs starting apps at once must find it up. */
  async launch(): Promise<void> {
    await this.must(['ping']);
  }

  /** `pm2 start <ecosystem file>` with this one app. */
  async start(app: Pm2App): Promise<void> {
    const file = join(this.home, `${app.name}.json`);
    // autorestart off: a fixture that fails must show as failed, not come back.
    writeFileSync(file, JSON.stringify({ apps: [{ ...app, instances: 1, autorestart: false }] }));
    await this.must(['start', file]);
  }

  async jlist(): Promise<Pm2Process[]> {
    return JSON.parse((await this.must(['jlist'])).stdout) as Pm2Process[];
  }

  /** The daemon's log (pm2.log): its "Stopping", "exited with code", "sending SIGKILL" lines. */
  log(): string {
    try {
      return readFileSync(join(this.home, 'pm2.log'), 'utf8');
    } catch {
      return '';
    }
  }

  /**
   * How PM2 saw `name` stop: its "exited with code [c] via signal [s]" line, and the ms from its
   * "Stopping app" line (written just before it sends the signal and starts the kill_timeout
   * timer) to that one. Undefined until the daemon logged both.
   */
  stopped(name: string): { code: number; signal: string; ms: number } | undefined {
    const log = this.log();
    const stopping = new RegExp(`^${STAMP}Stopping app:${name} id:\\d+$`, 'm').exec(log);
    const exited = new RegExp(
      `^${STAMP}App \\[${name}:\\d+\\] exited with code \\[(-?\\d+)\\] via signal \\[(\\w+)\\]$`,
      'm',
    ).exec(log);
    if (!stopping || !exited) return undefined;
    // Both stamps in the daemon's local time: their difference is what counts.
    return {
      code: Number(exited[2]),
      signal: exited[3]!,
      ms: Date.parse(exited[1]!) - Date.parse(stopping[1]!),
    };
  }

  daemonPid(): number | undefined {
    try {
      return Number(readFileSync(join(this.home, 'pm2.pid'), 'utf8').trim()) || undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * `pm2 kill` (it stops every app, with each one's kill_timeout, then ends the daemon), then
   * SIGKILL for the daemon and `pids` if any of them is still running. Returns what survived
   * `pm2 kill` (the test fails on it) and removes PM2_HOME.
   */
  async kill(pids: number[], killTimeoutMs: number): Promise<string[]> {
    const daemon = this.daemonPid();
    await this.cli(['kill'], killTimeoutMs + 30_000);
    const survivors: string[] = [];
    for (const [what, pid] of [['daemon', daemon], ...pids.map((p) => ['app', p] as const)] as const) {
      if (pid === undefined) continue;
      // The daemon's own exit follows its answer to `pm2 kill` by a moment.
      const until = Date.now() + 5_000;
      while (alive(pid) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      if (!alive(pid)) continue;
      survivors.push(`${what} ${pid}`);
      process.kill(pid, 'SIGKILL');
    }
    rmSync(this.home, { recursive: true, force: true });
    return survivors;
  }
}
