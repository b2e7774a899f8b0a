/**
 * What the json codec refuses: anything `JSON.parse(JSON.stringify(v))`
 * would not give back as it was. JSON.stringify turns a `Date` into a
 * string, a `Map` or `Set` into `{}`, a typed array into an object of
 * indices, a class instance into a plain object, `NaN` and `undefined` in an
 * array into `null`, and drops functions and symbols; the first caller would
 * get the original and every later one the copy, under the same type.
 *
 * Accepted: strings, finite numbers, booleans, null, arrays, and objects
 * whose prototype is `Object.prototype` or null, recursively; an `undefined`
 * property (dropped, it reads back as undefined all the same).
 *
 * @module
 */

/** Why a value cannot round-trip and where: `path` is built innermost first, while unwinding. */
export interface Refusal {
  readonly reason: string;
  readonly path: (string | number)[];
}

/**
 * The first part of `value` that would not round-trip through JSON, or
 * undefined. Call it on a value JSON.stringify accepted: it has no cycle then
 * (this walk visits a subset of what stringify did), so none is looked for,
 * and a value that passes pays no path building at all.
 */
export function jsonRefusal(value: unknown, inArray = false): Refusal | undefined {
  switch (typeof value) {
    case "string":
    case "boolean":
      return undefined;
    case "number":
      return Number.isFinite(value) ? undefined : refuse(`is ${value} (it would come back as null)`);
    case "undefined":
      return inArray ? refuse("is undefined in an array (it would come back as null)") : undefined;
    case "bigint":
      return refuse("is a BigInt (JSON has none)");
    case "function":
      return refuse("is a function (JSON drops it)");
    case "symbol":
      return refuse("is a symbol (JSON drops it)");
  }
  if (value === null) return undefined;
  const proto = Object.getPrototypeOf(value);
  if (proto === Array.prototype) {
    const array = value as unknown[];
    for (let i = 0; i < array.length; i++) {
      const inner = jsonRefusal(array[i], true);
      if (inner !== undefined) {
        inner.path.push(i);
        return inner;
      }
    }
    return undefined;
  }
  if (proto !== Object.prototype && proto !== null) return refuse(describe(value as object));
  const object = value as Record<string, unknown>;
  if (typeof object.toJSON === "function") {
    return refuse("has a toJSON method (it would come back as what toJSON returns)");
  }
  for (const key of Object.keys(object)) {
    const inner = jsonRefusal(object[key], false);
    if (inner !== undefined) {
      inner.path.push(key);
      return inner;
    }
  }
  return undefined;
}

/**
 * Where a value JSON.stringify threw on is at fault (a BigInt, a cycle, a
 * throwing getter): the same walk, watching for cycles this time. Only this
 * path, already failing, pays for the list of ancestors.
 */
export function refusalOfError(value: unknown): Refusal {
  return walkWithAncestors(value, [], false) ?? refuse("cannot be written as JSON");
}

function walkWithAncestors(value: unknown, ancestors: object[], inArray: boolean): Refusal | undefined {
  if (value === null || typeof value !== "object") return jsonRefusal(value, inArray);
  if (ancestors.includes(value)) return refuse("refers back to an object that contains it (a cycle)");
  const proto = Object.getPrototypeOf(value);
  if (proto !== Array.prototype) {
    if (proto !== Object.prototype && proto !== null) return refuse(describe(value));
    if (typeof (value as { toJSON?: unknown }).toJSON === "function") {
      return refuse("has a toJSON method (it would come back as what toJSON returns)");
    }
  }
  ancestors.push(value);
  const array = proto === Array.prototype;
  const keys: (string | number)[] = array ? [...(value as unknown[]).keys()] : Object.keys(value);
  for (const key of keys) {
    let inner: Refusal | undefined;
    try {
      inner = walkWithAncestors((value as Record<string | number, unknown>)[key], ancestors, array);
    } catch (error) {
      inner = refuse(`could not be read (${error instanceof Error ? error.message : String(error)})`);
    }
    if (inner !== undefined) {
      inner.path.push(key);
      return inner;
    }
  }
  ancestors.pop();
  return undefined;
}

function refuse(reason: string): Refusal {
  return { reason, path: [] };
}

function describe(value: object): string {
  if (value instanceof Date) return "is a Date (it would come back as a string)";
  if (value instanceof Map || value instanceof Set) {
    return `is a ${value instanceof Map ? "Map" : "Set"} (it would come back as {})`;
  }
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) {
    const name = value.constructor.name;
    return `is ${
      /^[AEIO]/.test(name) ? "an" : "a"
    } ${name} (it would come back as a plain object; use the bytes codec or encode it)`;
  }
  if (Array.isArray(value)) return "is an array of a subclass (it would come back as a plain Array)";
  const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
  return `is ${typeof name === "string" && name !== "" ? `a ${name} instance` : "an object with a prototype"} ` +
    "(it would come back as a plain object, without its class)";
}

/** `$`, then `.name`, `[3]` or `["odd key"]` for each step inward. */
export function formatPath(path: readonly (string | number)[]): string {
  let out = "$";
  for (let i = path.length - 1; i >= 0; i--) {
    const step = path[i]!;
    out += typeof step === "number"
      ? `[${step}]`
      : /^[A-Za-z_$][\w$]*$/.test(step)
      ? `.${step}`
      : `[${JSON.stringify(step)}]`;
  }
  return out;
}
