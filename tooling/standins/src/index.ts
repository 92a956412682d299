import { join } from 'node:path';
import { loadAddon } from '@devexit/native/loader';

const release = join(__dirname, '..', 'build', 'Release');

/** Path of the crash-reproducing stand-in runtime (a test double: CI only). */
export const crashRuntimePath: string = join(release, 'libdevexit_crash_rt.so');
/** Path of the fixture addon whose services call the stand-in runtime. */
export const fixtureAddonPath: string = join(release, 'exit_fixture.node');

export interface StartServiceOptions {
  service?: string;
  closeDelayMs?: number;
  failClose?: boolean;
  /** Call the stand-in runtime from the service thread (default true). */
  runtime?: boolean;
  /** The close calls exit(code) first, its service thread still running. */
  exitInClose?: number;
}

export interface StressResult {
  total: number;
  accepted: number;
  refused: number;
  otherStatus: number;
  closedOnce: number;
  neverClosed: number;
  closedTwiceOrMore: number;
  acceptedNotClosedOnce: number;
  refusedButClosed: number;
  lateStatus: number;
  /** With `duplicates`: registrations of a key again that were accepted (must be 0). */
  duplicatesAccepted?: number;
  /** With `duplicates`: their statuses other than already registered or exiting (must be 0). */
  duplicatesOtherStatus?: number;
  /** With `duplicates`: closes of the duplicates' context (must be 0). */
  duplicatesClosed?: number;
}

export interface FixtureAddon {
  startService(index: number, options?: StartServiceOptions): number;
  registerIdle(backend: string, index: number, service: string, closeDelayMs?: number): number;
  exitFromThread(code: number): void;
  /** Native exit(code) on the calling (main) thread: no 'exit' event, no JS. */
  exitNow(code: number): never;
  stress(threads: number, keysPerThread: number, closeAfterMs?: number, duplicates?: boolean): StressResult;
  /** Registers n idle closes spread over 64 devices; returns the nanoseconds it took. */
  registerMany(backend: string, n: number): number;
  abiMismatch(): { status: number; message: string };
  registryAddress(): bigint;
  forget(index: number, service?: string): number;
}

/**
 * Loads @devexit/native first (the fixture finds the registry through it), then the fixture,
 * through the one devexit loader: DEVEXIT_STANDINS_FIXTURE, else this package's own build (a test
 * double has no prebuild: `npx devexit-build @devexit/standins`).
 */
export function loadFixture(): FixtureAddon {
  require('@devexit/native');
  return loadAddon<FixtureAddon>({
    name: 'exit_fixture',
    packageDir: join(__dirname, '..'),
    envVar: 'DEVEXIT_STANDINS_FIXTURE',
    platformPackages: false,
  });
}
