/**
 * Errors a cache caller may branch on: {@linkcode OverloadedError} when
 * `limit()` shed the call, {@linkcode TimeoutError} (shared with the RESP
 * client) when a wait or the call's own timeout ran out, and
 * {@linkcode ClosedError} for a call made after `close()`, {@linkcode SchemaError}
 * when the pipeline's `schema` refused a loaded value.
 *
 * @module
 */
import { brand, hasBrand } from "../resp/shared/mod.ts";
import type { HerdlessErrorOptions } from "../resp/errors.ts";
import type { StandardSchemaIssue } from "./schema.ts";

export { isTimeoutError, TimeoutError } from "../resp/errors.ts";

/**
 * `limit()` refused to start an origin load: `concurrency` loads were already
 * in flight and none finished within `queueMs`. The origin was not called.
 *
 * @example Shed load gracefully
 * ```ts
 * import { isOverloadedError, OverloadedError } from "@herdless/herdless";
 * const error = new OverloadedError("Cannot load herdless:{x}:data: 4 loads in flight", 4, 0);
 * console.log(isOverloadedError(error), error.concurrency); // true 4
 * ```
 */
export class OverloadedError extends Error {
  /** The limit that was reached. */
  readonly concurrency: number;
  /** How long the call queued before it was shed, in ms. */
  readonly queuedMs: number;
  /**
   * Create the error (`limit()` does; an adapter or a test may too).
   *
   * @param message what was refused and why.
   * @param concurrency the limit that was reached.
   * @param queuedMs how long the call queued, in ms.
   * @param options the `cause`, if any.
   */
  constructor(message: string, concurrency: number, queuedMs: number, options?: HerdlessErrorOptions) {
    super(message, options);
    this.name = "OverloadedError";
    brand(this, "OverloadedError");
    this.concurrency = concurrency;
    this.queuedMs = queuedMs;
  }
}

/**
 * True when `e` is an {@linkcode OverloadedError} from any copy of herdless
 * (a Deno copy and an npm copy may both be loaded, so `instanceof` alone is not enough).
 *
 * @example Works across package copies
 * ```ts
 * import { isOverloadedError } from "@herdless/herdless";
 * console.log(isOverloadedError(new Error("x"))); // false
 * ```
 */
export function isOverloadedError(e: unknown): e is OverloadedError {
  return hasBrand(e, "OverloadedError");
}

/**
 * A cache method was called after `close()`: a closed cache refuses every
 * method, and sends nothing to Redis. `method` names the method called.
 *
 * @example Tell a closed cache from a failed call
 * ```ts
 * import { connect, isClosedError, pipeline } from "@herdless/herdless";
 * const redis = await connect(process.env.REDIS_URL);
 * const cache = pipeline({ redis, ttlMs: 1000 });
 * await cache.close();
 * try {
 *   await cache.invalidate("user:1");
 * } catch (e) {
 *   console.log(isClosedError(e) && e.method, (e as Error).message); // "invalidate" "Cannot invalidate: the cache is closed"
 * }
 * await redis.close();
 * ```
 */
export class ClosedError extends Error {
  /** The method that was called (`"get"`, `"invalidate"`...). */
  readonly method: string;
  /**
   * Create the error (the cache does; an adapter or a test may too).
   *
   * @param method the cache method that was called.
   * @param options the `cause`, if any.
   */
  constructor(method: string, options?: HerdlessErrorOptions) {
    super(`Cannot ${method}: the cache is closed`, options);
    this.name = "ClosedError";
    brand(this, "ClosedError");
    this.method = method;
  }
}

/**
 * True when `e` is a {@linkcode ClosedError} from any copy of herdless
 * (a Deno copy and an npm copy may both be loaded, so `instanceof` alone is not enough).
 *
 * @example Works across package copies
 * ```ts
 * import { ClosedError, isClosedError } from "@herdless/herdless";
 * console.log(isClosedError(new ClosedError("get")), isClosedError(new Error("x"))); // true false
 * ```
 */
export function isClosedError(e: unknown): e is ClosedError {
  return hasBrand(e, "ClosedError");
}

/** Where a value the codec refused was and whose it was: options of {@linkcode CodecError}. */
export interface CodecErrorOptions {
  /** The error that caused this one. */
  cause?: unknown;
  /** Where in the value the codec stopped: `$` is the value, `$.user.createdAt` a field in it. @default {"$"} */
  path?: string;
  /** The data key the value was loaded for. */
  key?: string;
  /** The pipeline's `label` for its identity, when it has one. */
  label?: string;
}

/**
 * A codec refused a value it cannot store faithfully: the json codec a
 * `Date`, `Map`, `Set`, `BigInt`, typed array, class instance, `NaN`, a
 * cycle..., the string codec a lone surrogate, a custom codec whatever its
 * `encode` threw. Nothing was cached; a `get` that loaded the value rejects
 * with it. A `TypeError`, so code written for the earlier `TypeError` still
 * catches it.
 *
 * @example Tell which field is in the way
 * ```ts
 * import { connect, isCodecError, pipeline } from "@herdless/herdless";
 * const redis = await connect(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
 * const users = pipeline({ redis, ttlMs: 60_000, namespace: "codec-doc", label: (id) => `user ${String(id)}` });
 * try {
 *   await users.get("42", () => ({ name: "Ada", createdAt: new Date(0) }));
 * } catch (error) {
 *   if (isCodecError(error)) console.log(error.path, error.label); // "$.createdAt" "user 42"
 * }
 * await users.close();
 * await redis.close();
 * ```
 */
export class CodecError extends TypeError {
  /** Where in the value the codec stopped: `$` for the value itself, `$.items[3].at` inside it. */
  readonly path: string;
  /** The data key the value was for, when known. */
  readonly key: string | undefined;
  /** The identity's label (the pipeline's `label` option), when there is one. */
  readonly label: string | undefined;
  /**
   * Create the error (the codecs and the cache do; a custom codec may too).
   *
   * @param message what was refused and why.
   * @param options the path inside the value, the key, the label, the cause.
   */
  constructor(message: string, options?: CodecErrorOptions) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "CodecError";
    brand(this, "CodecError");
    this.path = options?.path ?? "$";
    this.key = options?.key;
    this.label = options?.label;
  }
}

/**
 * True when `e` is a {@linkcode CodecError} from any copy of herdless.
 *
 * @example Works across package copies
 * ```ts
 * import { CodecError, isCodecError } from "@herdless/herdless";
 * console.log(isCodecError(new CodecError("no")), isCodecError(new TypeError("no"))); // true false
 * ```
 */
export function isCodecError(e: unknown): e is CodecError {
  return hasBrand(e, "CodecError");
}

/** What a schema found and whose value it was: options of {@linkcode SchemaError}. */
export interface SchemaErrorOptions {
  /** The issues the schema reported, as it reported them. */
  issues: readonly StandardSchemaIssue[];
  /** The data key the value was loaded for. */
  key?: string;
  /** The pipeline's `label` for its identity, when it has one. */
  label?: string;
  /** The error that caused this one (a schema that threw). */
  cause?: unknown;
}

/**
 * The pipeline's `schema` refused a value a loader returned (or `set()` was
 * given): nothing was stored, and the call rejects with it. `issues` are the
 * schema's own; `path` is where the first one is (`$` the value itself,
 * `$.user.name` a field in it), and the message names it. A value read from
 * Redis that the schema refuses is not an error but a miss (event `invalid`).
 *
 * @example Tell which field is wrong
 * ```ts
 * import { isSchemaError, SchemaError } from "@herdless/herdless";
 * const error = new SchemaError("Cannot cache user 1: the schema refused the value at $.name (expected a string)", {
 *   issues: [{ message: "expected a string", path: ["name"] }],
 * });
 * console.log(isSchemaError(error), error.path, error.issues.length); // true $.name 1
 * ```
 */
export class SchemaError extends TypeError {
  /** The schema's issues, as it reported them. */
  readonly issues: readonly StandardSchemaIssue[];
  /** Where the first issue is: `$` for the value itself, `$.items[3].at` inside it. */
  readonly path: string;
  /** The data key the value was for, when known. */
  readonly key: string | undefined;
  /** The identity's label (the pipeline's `label` option), when there is one. */
  readonly label: string | undefined;
  /**
   * Create the error (the cache does; a test may too).
   *
   * @param message what was refused and where.
   * @param options the issues, the key, the label, the cause.
   */
  constructor(message: string, options: SchemaErrorOptions) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "SchemaError";
    brand(this, "SchemaError");
    this.issues = options.issues;
    this.path = issuePath(options.issues[0]);
    this.key = options.key;
    this.label = options.label;
  }
}

/**
 * True when `e` is a {@linkcode SchemaError} from any copy of herdless.
 *
 * @example Works across package copies
 * ```ts
 * import { isSchemaError, SchemaError } from "@herdless/herdless";
 * console.log(isSchemaError(new SchemaError("no", { issues: [] })), isSchemaError(new TypeError("no"))); // true false
 * ```
 */
export function isSchemaError(e: unknown): e is SchemaError {
  return hasBrand(e, "SchemaError");
}

/** Where `issue` is in the value, written as a path from `$` (`$.user.tags[2]`). */
export function issuePath(issue: StandardSchemaIssue | undefined): string {
  let path = "$";
  for (const part of issue?.path ?? []) {
    const key = typeof part === "object" && part !== null ? part.key : part;
    if (typeof key === "number") path += `[${key}]`;
    else if (typeof key === "string" && /^[A-Za-z_$][\w$]*$/.test(key)) path += `.${key}`;
    else path += `[${JSON.stringify(String(key))}]`;
  }
  return path;
}
