/**
 * Option checks shared by the factories. Every message names the factory, the
 * setting and the value, so a bad configuration fails where it is written.
 *
 * @module
 */

function show(value: unknown): string {
  return typeof value === "string" ? JSON.stringify(value) : String(value);
}

/** Throws unless `value` is an integer >= 1. */
export function positiveInt(where: string, name: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value <= 0) {
    throw new RangeError(`Cannot ${where}: '${name}' must be a positive integer, got ${show(value)}`);
  }
  return value;
}

/** Throws unless `value` is an integer >= 0. */
export function nonNegativeInt(where: string, name: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) {
    throw new RangeError(`Cannot ${where}: '${name}' must be a non-negative integer, got ${show(value)}`);
  }
  return value;
}

/** Throws unless `value` is a finite number > 0. */
export function positiveNumber(where: string, name: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw new RangeError(`Cannot ${where}: '${name}' must be a positive finite number, got ${show(value)}`);
  }
  return value;
}

/** Throws unless `value` is a boolean. */
export function boolean(where: string, name: string, value: unknown): boolean {
  if (typeof value !== "boolean") {
    throw new TypeError(`Cannot ${where}: '${name}' must be a boolean, got ${show(value)}`);
  }
  return value;
}

/** Throws unless `value` is a function. */
export function func<F>(where: string, name: string, value: unknown): F {
  if (typeof value !== "function") {
    throw new TypeError(`Cannot ${where}: '${name}' must be a function, got ${typeof value}`);
  }
  return value as F;
}

/** Throws unless `options` is undefined or a plain object. */
export function optionsObject<T extends object>(where: string, options: unknown): Partial<T> {
  if (options === undefined) return {};
  if (options === null || typeof options !== "object") {
    throw new TypeError(
      `Cannot ${where}: options must be an object, got ${options === null ? "null" : typeof options}`,
    );
  }
  return options as Partial<T>;
}
