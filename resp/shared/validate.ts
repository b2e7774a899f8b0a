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
