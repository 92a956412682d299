// Debian's chromium, headless: what a page or picture looks like (a screenshot) and where the
// browser laid its elements out (the DOM after a script of ours ran, --dump-dom).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodePng, type Image } from './png.js';

/** The browser to use: DEVEXIT_CHROMIUM, else chromium on PATH or in /usr/bin. */
export function findChromium(): string | undefined {
  const given = process.env.DEVEXIT_CHROMIUM;
  if (given) return existsSync(given) ? given : undefined;
  for (const dir of [...(process.env.PATH ?? '').split(':'), '/usr/bin']) {
    for (const name of ['chromium', 'chromium-browser']) {
      const file = join(dir, name);
      if (dir && existsSync(file)) return file;
    }
  }
  return undefined;
}

function chromium(browser: string, args: string[], url: string): { stdout: string; profile: string } {
  const profile = mkdtempSync(join(tmpdir(), 'devexit-chromium-'));
  try {
    const r = spawnSync(
      browser,
      [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--hide-scrollbars',
        '--force-device-scale-factor=1',
        `--user-data-dir=${profile}`,
        ...args,
        url,
      ],
      { encoding: 'utf8', timeout: 60_000, maxBuffer: 64 << 20 },
    );
    if (r.status !== 0) throw new Error(`chromium exited ${r.status} ${r.signal}: ${r.stderr.slice(-2000)}`);
    return { stdout: r.stdout, profile };
  } finally {
    rmSync(profile, { recursive: true, force: true });
  }
}

/** A screenshot of `file` in a window of width × height. */
export function screenshot(browser: string, file: string, width: number, height: number): Image {
  const out = join(mkdtempSync(join(tmpdir(), 'devexit-shot-')), 'shot.png');
  try {
    chromium(browser, [`--window-size=${width},${height}`, `--screenshot=${out}`], `file://${file}`);
    return decodePng(readFileSync(out));
  } finally {
    rmSync(join(out, '..'), { recursive: true, force: true });
  }
}

/** The serialized DOM of `file` once loaded (its scripts ran). */
export function dumpDom(browser: string, file: string, width: number, height: number): string {
  return chromium(browser, [`--window-size=${width},${height}`, '--dump-dom'], `file://${file}`).stdout;
}
