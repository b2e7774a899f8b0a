/**
 * Option checks shared by every factory of both layers (`connect`, the
 * cluster, the decoder, the pipeline, each strategy). Every message names the
 * action, the setting and the value, so a bad configuration fails where it is
 * written: ``Cannot create lease: 'leaseMs' must be a positive integer, got 0``.
 *
 * `where` is the action, as in "Cannot <where>": `"connect"`, `"create lease"`.
 *
 * @module
 */

/** A value as a message shows it: strings quoted, everything else as `String()` does. */
export function show(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "bigint") return `${value}n`;
  if (typeof value === "symbol") return value.toString();
  if (Array.isArray(value)) return "an array";
  if (value !== null && typeof value === "object") return "an object";
  return String(value);
}

/** Throws a `RangeError` unless `value` is an integer >= 1. */
export function positiveInt(where: string, name: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value <= 0) {
    throw new RangeError(`Cannot ${where}: '${name}' must be a positive integer, got ${show(value)}`);
  }
  return value;
}

/** Throws a `RangeError` unless `value` is an integer >= 0. */
export function nonNegativeInt(where: string, name: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) {
    throw new RangeError(`Cannot ${where}: '${name}' must be a non-negative integer, got ${show(value)}`);
  }
  return value;
}

/** Throws a `RangeError` unless `value` is an integer in `[min, max]`. */
export function intInRange(where: string, name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`Cannot ${where}: '${name}' must be an integer in ${min}..${max}, got ${show(value)}`);
  }
  return value;
}

/** Throws a `RangeError` unless `value` is a finite number > 0. */
export function positiveNumber(where: string, name: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw new RangeError(`Cannot ${where}: '${name}' must be a positive finite number, got ${show(value)}`);
  }
  return value;
}

/** Throws a `TypeError` unless `value` is a boolean. */
export function boolean(where: string, name: string, value: unknown): boolean {
  if (typeof value !== "boolean") {
    throw new TypeError(`Cannot ${where}: '${name}' must be a boolean, got ${show(value)}`);
  }
  return value;
}

/** Throws a `TypeError` unless `value` is a function. */
export function func<F>(where: string, name: string, value: unknown): F {
  if (typeof value !== "function") {
    throw new TypeError(`Cannot ${where}: '${name}' must be a function, got ${typeof value}`);
  }
  return value as F;
}

/** `undefined`, or throws a `TypeError` unless `value` is a string. */
export function optionalString(where: string, name: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string") {
    throw new TypeError(`Cannot ${where}: '${name}' must be a string, got ${typeof value}`);
  }
  return value;
}

/** Throws a `TypeError` unless `options` is `undefined` or an object; returns it (or `{}`). */
export function optionsObject<T extends object>(where: string, options: unknown): Partial<T> {
  if (options === undefined) return {};
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw new TypeError(
      `Cannot ${where}: options must be an object, got ${
        options === null ? "null" : Array.isArray(options) ? "an array" : typeof options
      }`,
    );
  }
  return options as Partial<T>;
}

// The Set of each list of names, built on its first check: a factory passes
// the same module-level array on every call.
const nameSets = new WeakMap<readonly string[], ReadonlySet<string>>();

/**
 * Throws a `TypeError` when `options` holds a key `allowed` does not name:
 * ``Unknown option 'nameSpace' for pipeline(); did you mean 'namespace'?``,
 * the suggestion only when an allowed name is close (the same but for case,
 * or a typo or two away). A misspelt option would otherwise be ignored and
 * its default used in silence.
 *
 * Costs a `for...in` over the given keys and one `Set` lookup each: cheap
 * enough for per-call options. Skip the call when `options` is undefined.
 *
 * @param where the function the options belong to, as a caller wrote it: `"connect()"`, `"send()"`.
 * @param options the object as given (its own and inherited enumerable keys are checked).
 * @param allowed every name it may hold: a module-level array (its Set is built once) or a Set.
 * @param prefix put before each name in the message, for a nested object: `"reconnect."`.
 * @throws {TypeError} naming the first unknown key.
 */
export function knownOptions(
  where: string,
  options: object,
  allowed: readonly string[] | ReadonlySet<string>,
  prefix = "",
): void {
  let names: ReadonlySet<string> | undefined;
  if (isNameList(allowed)) {
    names = nameSets.get(allowed);
    if (names === undefined) nameSets.set(allowed, names = new Set(allowed));
  } else names = allowed;
  for (const key in options) {
    if (!names.has(key)) throw unknownOption(where, key, names, prefix);
  }
}

/**
 * `options` checked as {@linkcode optionsObject} does, then for keys it does
 * not know ({@linkcode knownOptions}): what a factory or a call does first
 * with the options it was given.
 *
 * @param where the action, for a non-object: `"create lease"`.
 * @param call the function, for an unknown key: `"lease()"`.
 * @param options the options as given (`undefined`: none).
 * @param allowed every name they may hold.
 * @returns the options, typed.
 * @throws {TypeError} for a non-object, or naming the first unknown key (and the close name it resembles).
 */
export function checkedOptions<T extends object>(
  where: string,
  call: string,
  options: unknown,
  allowed: readonly string[] | ReadonlySet<string>,
): Partial<T> {
  const o = optionsObject<T>(where, options);
  if (options !== undefined) knownOptions(call, o, allowed);
  return o;
}

function isNameList(allowed: readonly string[] | ReadonlySet<string>): allowed is readonly string[] {
  return Array.isArray(allowed);
}

function unknownOption(where: string, key: string, names: ReadonlySet<string>, prefix: string): TypeError {
  const close = closestName(key, names);
  const hint = close === undefined ? "" : `; did you mean '${prefix}${close}'?`;
  return new TypeError(`Unknown option '${prefix}${key}' for ${where}${hint}`);
}

/**
 * The allowed name nearest to `key` when it is near enough to be what was
 * meant: the same ignoring case, or within an edit distance (a swap of two
 * neighbours counts as one edit) of 1 for names of up to 3 characters, 2 up
 * to 8, 3 beyond, counted on the shorter of the two. The first of equals
 * wins. Failing that, the one name that begins as the key does over its
 * first four characters (three for a three-character key): `leaseTime`
 * meant `leaseMs`, `ttl` meant `ttlMs`.
 */
export function closestName(key: string, names: Iterable<string>): string | undefined {
  const lower = key.toLowerCase();
  let best: string | undefined;
  let bestDistance = Infinity;
  const stem = lower.slice(0, 4);
  let stemmed: string | undefined;
  let stems = 0;
  for (const name of names) {
    const shorter = Math.min(name.length, key.length);
    const bound = shorter <= 3 ? 1 : shorter <= 8 ? 2 : 3;
    const d = editDistance(lower, name.toLowerCase(), bound);
    if (d <= bound && d < bestDistance) {
      best = name;
      bestDistance = d;
    }
    if (stem.length >= 3 && name.toLowerCase().startsWith(stem)) {
      stemmed = name;
      stems++;
    }
  }
  return best ?? (stems === 1 ? stemmed : undefined);
}

/**
 * Edit distance with adjacent swaps (optimal string alignment), or
 * `bound + 1` as soon as it must exceed `bound`: only the close names matter.
 */
function editDistance(a: string, b: string, bound: number): number {
  if (Math.abs(a.length - b.length) > bound) return bound + 1;
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, before[j - 2]! + 1);
      current.push(d);
      if (d < rowMin) rowMin = d;
    }
    if (rowMin > bound) return bound + 1;
    before = previous;
    previous = current;
  }
  return previous[b.length]!;
}

/**
 * Throws a `TypeError` unless `value` is an `AbortSignal` (or quacks like
 * one: `aborted`, `reason`, `addEventListener`), so a wrong value fails at
 * the call instead of where the signal is first listened to.
 */
export function abortSignal(where: string, name: string, value: unknown): AbortSignal {
  if (
    value === null || typeof value !== "object" || typeof (value as AbortSignal).aborted !== "boolean" ||
    typeof (value as AbortSignal).addEventListener !== "function"
  ) {
    throw new TypeError(`Cannot ${where}: '${name}' must be an AbortSignal, got ${show(value)}`);
  }
  return value as AbortSignal;
}
