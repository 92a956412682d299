/**
 * One set of argument checks and one wording for their errors, for every entry point of core.
 * Errors carry Node's codes: ERR_INVALID_ARG_TYPE (a TypeError: wrong kind of value),
 * ERR_INVALID_ARG_VALUE (a TypeError: right kind, refused value), ERR_OUT_OF_RANGE (a RangeError).
 * Checks run before anything changes: bad input changes no state.
 */

export type ArgumentErrorCode = 'ERR_INVALID_ARG_TYPE' | 'ERR_INVALID_ARG_VALUE' | 'ERR_OUT_OF_RANGE';

/** A bad argument's kind or value: `code` is ERR_INVALID_ARG_TYPE or ERR_INVALID_ARG_VALUE. */
export class DevexitTypeError extends TypeError {
  readonly code: 'ERR_INVALID_ARG_TYPE' | 'ERR_INVALID_ARG_VALUE';
  constructor(code: 'ERR_INVALID_ARG_TYPE' | 'ERR_INVALID_ARG_VALUE', message: string) {
    super(message);
    this.code = code;
  }
}
// Named as Node names its own ERR_INVALID_ARG_* errors: a TypeError, told apart by `code`.
Object.defineProperty(DevexitTypeError.prototype, 'name', { value: 'TypeError' });

/** A number outside its range (or not an integer where one is needed): ERR_OUT_OF_RANGE. */
export class DevexitRangeError extends RangeError {
  readonly code = 'ERR_OUT_OF_RANGE' as const;
}
Object.defineProperty(DevexitRangeError.prototype, 'name', { value: 'RangeError' });

/** How much of a value a message shows. */
export const MAX_SHOWN = 80;

/** Up to MAX_SHOWN characters of a text, the last an ellipsis where it was cut. */
export function clip(text: string): string {
  return text.length <= MAX_SHOWN ? text : `${text.slice(0, MAX_SHOWN - 1)}\u2026`;
}

/**
 * How a bad value is named in a message: strings quoted, objects by kind, never by content, and
 * at most about 80 characters (a 16 MiB string gives a short message).
 */
export function describe(value: unknown): string {
  switch (typeof value) {
    case 'string': {
      if (value.length <= MAX_SHOWN) return clip(JSON.stringify(value));
      return `${clip(JSON.stringify(value.slice(0, MAX_SHOWN)))} (${value.length} characters)`;
    }
    case 'function':
      return 'a function';
    case 'symbol':
      return clip(String(value));
    case 'bigint':
      return clip(`${value}n`);
    case 'object':
      if (value === null) return 'null';
      return Array.isArray(value) ? 'an array' : 'an object';
    default:
      return clip(String(value));
  }
}

export function invalidType(argument: string, expected: string, value: unknown): DevexitTypeError {
  return new DevexitTypeError(
    'ERR_INVALID_ARG_TYPE',
    `devexit: ${argument} must be ${expected}; got ${describe(value)}`,
  );
}

export function invalidValue(argument: string, expected: string, value: unknown): DevexitTypeError {
  return new DevexitTypeError(
    'ERR_INVALID_ARG_VALUE',
    `devexit: ${argument} must be ${expected}; got ${describe(value)}`,
  );
}

export function outOfRange(argument: string, expected: string, value: unknown): DevexitRangeError {
  return new DevexitRangeError(`devexit: ${argument} must be ${expected}; got ${describe(value)}`);
}

/**
 * An integer in [min, max]: ERR_INVALID_ARG_TYPE for a non-number, ERR_OUT_OF_RANGE for any other
 * number (negative, fractional, NaN, too large), as Node's own validators do. Every entry point of
 * core and of the backends checks integers here: deviceId('cpu', -1) and backend.open(-1) fail alike.
 */
export function checkInteger(
  value: unknown,
  argument: string,
  min = 0,
  max: number = Number.MAX_SAFE_INTEGER,
): number {
  if (typeof value !== 'number') throw invalidType(argument, `an integer in ${min}..${max}`, value);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw outOfRange(argument, `an integer in ${min}..${max}`, value);
  }
  return value;
}

/**
 * A file path from the caller: a non-empty string without NUL (the C side would cut the path at
 * the NUL and use another file: loadKernel('/tmp/a\0b') opened /tmp/a).
 */
export function checkPath(value: unknown, argument: string): string {
  const rule = 'a file path (a non-empty string without NUL characters)';
  if (typeof value !== 'string') throw invalidType(argument, rule, value);
  if (value.length === 0 || value.includes('\0')) throw invalidValue(argument, rule, value);
  return value;
}

/**
 * An options object (undefined allowed: returns an empty one) with only the keys listed: a typo
 * such as `{ timeout: 5 }` is refused rather than silently ignored.
 */
export function checkOptions(
  value: unknown,
  argument: string,
  keys: readonly string[],
): Record<string, unknown> {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalidType(argument, `an object { ${keys.join(', ')} }`, value);
  }
  for (const key of Object.keys(value)) {
    if (!keys.includes(key)) {
      throw new DevexitTypeError(
        'ERR_INVALID_ARG_VALUE',
        `devexit: ${argument} has an unknown option ${describe(key)}; it takes ${keys.join(', ')}`,
      );
    }
  }
  return value as Record<string, unknown>;
}
