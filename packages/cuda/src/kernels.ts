// What a kernel source is, and which target a device's kernels are compiled for.

/**
 * PTX text, not CUDA C: its first directive (after blank lines and comments, as NVRTC writes
 * them) is `.version`. CUDA C cannot start with a `.` token.
 */
export function isPtx(source: string): boolean {
  const text = source.replace(/^(\s+|\/\/[^\n]*\n?|\/\*[\s\S]*?\*\/)+/, '');
  return /^\.version\s/.test(text);
}

/** The bytes cuModuleLoadData reads: PTX must end with a NUL; cubin and fatbin images may. */
export function moduleImage(source: string | Uint8Array): Uint8Array {
  const bytes = typeof source === 'string' ? Buffer.from(source, 'utf8') : source;
  if (bytes.length > 0 && bytes[bytes.length - 1] === 0) return bytes;
  const out = new Uint8Array(bytes.length + 1);
  out.set(bytes);
  return out;
}

/**
 * The NVRTC target for a device of compute capability major.minor: sm_XY when NVRTC knows it;
 * else PTX for the newest virtual architecture it knows below it (compute_XY), which the driver
 * compiles for the device when it loads the module.
 */
export function targetFor(major: number, minor: number, supported: readonly number[]): string {
  const want = major * 10 + minor;
  if (supported.length === 0 || supported.includes(want)) return `sm_${want}`;
  const below = supported.filter((a) => a <= want);
  if (below.length === 0) return `sm_${want}`;
  return `compute_${Math.max(...below)}`;
}

/** An NVRTC target: sm_XY, sm_XYa, compute_XY, compute_XYa. */
export const ARCH = /^(sm|compute)_[0-9]{2,3}[a-z]?$/;
