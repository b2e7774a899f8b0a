/**
 * Errors raised by the RESP client. Each sets `name`, keeps `cause`, carries
 * the data a caller branches on, and has an `isXxxError` check that works
 * across two loaded copies of the package (a Deno copy and an npm copy, where
 * `instanceof` alone would fail) and that a foreign error of the same name
 * (the `DOMException` named "TimeoutError" of `AbortSignal.timeout()`) cannot
 * fool.
 *
 * @module
 */
import { brand, hasBrand } from "./shared/mod.ts";

/** Options shared by the error constructors. */
export interface HerdlessErrorOptions {
  /** The error that caused this one. */
  cause?: unknown;
}

/**
 * An error reply from the server (`-ERR ...`, `-NOSCRIPT ...`, `!` blob
 * errors). `code` is the first word of the message, as Redis uses it.
 *
 * @example Branch on the code
 * ```ts
 * import { RedisReplyError } from "@herdless/herdless";
 * const e = new RedisReplyError("NOSCRIPT No matching script");
 * console.log(e.code); // "NOSCRIPT"
 * ```
 */
export class RedisReplyError extends Error {
  /** The first word of the reply, e.g. `ERR`, `WRONGTYPE`, `NOSCRIPT`, `MOVED`. */
  readonly code: string;
  /**
   * An error reply, its code read from its first word.
   *
   * @param message the server's text, e.g. `"WRONGTYPE Operation against a key holding the wrong kind of value"`.
   * @param options the `cause`, if any.
   */
  constructor(message: string, options?: HerdlessErrorOptions) {
    super(message, options);
    this.name = "RedisReplyError";
    brand(this, "RedisReplyError");
    const space = message.indexOf(" ");
    this.code = space === -1 ? message : message.slice(0, space);
  }
}

/**
 * True when `e` is a {@linkcode RedisReplyError} from any copy of herdless.
 *
 * @param e anything caught.
 * @returns whether it is a reply error (then `e.code` is there).
 * @example Tell a server's error from others
 * ```ts
 * import { isRedisReplyError, RedisReplyError } from "@herdless/herdless";
 * console.log(isRedisReplyError(new RedisReplyError("ERR x")), isRedisReplyError(new Error("ERR x"))); // true false
 * ```
 */
export function isRedisReplyError(e: unknown): e is RedisReplyError {
  return hasBrand(e, "RedisReplyError");
}

/**
 * The connection was lost, could not be made, or was closed. A command
 * rejected with this error may or may not have run on the server when it had
 * already been written; it is never sent again by the client.
 *
 * @example Check for one
 * ```ts
 * import { ConnectionError, isConnectionError } from "@herdless/herdless";
 * console.log(isConnectionError(new ConnectionError("Connection to redis://127.0.0.1:6379 lost"))); // true
 * ```
 */
export class ConnectionError extends Error {
  /**
   * A connection error with what happened.
   *
   * @param message what happened, naming the server.
   * @param options the `cause`: the socket error, or the server's refusal.
   */
  constructor(message: string, options?: HerdlessErrorOptions) {
    super(message, options);
    this.name = "ConnectionError";
    brand(this, "ConnectionError");
  }
}

/**
 * True when `e` is a {@linkcode ConnectionError} from any copy of herdless.
 *
 * @param e anything caught.
 * @returns whether it is a connection error.
 * @example A plain Error is not one
 * ```ts
 * import { isConnectionError } from "@herdless/herdless";
 * console.log(isConnectionError(new Error("lost"))); // false
 * ```
 */
export function isConnectionError(e: unknown): e is ConnectionError {
  return hasBrand(e, "ConnectionError");
}

/**
 * The byte stream from the server is not valid RESP. `offset` is the position
 * of the offending byte counted from the start of the connection's stream.
 * The connection that saw it is closed.
 *
 * @example The offset is in the message
 * ```ts
 * import { ProtocolError } from "@herdless/herdless";
 * console.log(new ProtocolError("Invalid RESP: unknown type byte 0x3f", 12).message);
 * // "Invalid RESP: unknown type byte 0x3f at byte offset 12"
 * ```
 */
export class ProtocolError extends Error {
  /** Byte offset in the stream (from the start of the connection) of the offending byte. */
  readonly offset: number;
  /**
   * A protocol error at a byte of the stream.
   *
   * @param message what is wrong with the stream; the offset is appended.
   * @param offset the position of the offending byte.
   * @param options the `cause`, if any.
   */
  constructor(message: string, offset: number, options?: HerdlessErrorOptions) {
    super(`${message} at byte offset ${offset}`, options);
    this.name = "ProtocolError";
    brand(this, "ProtocolError");
    this.offset = offset;
  }
}

/**
 * True when `e` is a {@linkcode ProtocolError} from any copy of herdless.
 *
 * @param e anything caught.
 * @returns whether it is a protocol error (then `e.offset` is there).
 * @example Check for one
 * ```ts
 * import { isProtocolError, ProtocolError } from "@herdless/herdless";
 * console.log(isProtocolError(new ProtocolError("bad", 0))); // true
 * ```
 */
export function isProtocolError(e: unknown): e is ProtocolError {
  return hasBrand(e, "ProtocolError");
}

/** Options of the {@linkcode TimeoutError} constructor. */
export interface TimeoutErrorOptions extends HerdlessErrorOptions {
  /**
   * The setting whose time ran out: `"timeoutMs"` (a call's own),
   * `"commandTimeoutMs"` (the client's default, or a cache's), `"connectTimeoutMs"`,
   * `"waitMs"` (a lease wait). `limit()`'s `queueMs` sheds with an `OverloadedError` instead.
   * @default {"timeoutMs"}
   */
  setting?: string;
  /** That setting's value, in milliseconds. @default {waitedMs} */
  timeoutMs?: number;
}

/**
 * A deadline ran out: a command timeout, a connect timeout, or a cache
 * caller's wait for another owner's load. A waiter that times out never falls
 * through to the origin.
 *
 * `setting` names the setting that ran out and `timeoutMs` its value; the
 * message says the same and nothing measured (`Command GET timed out:
 * 'timeoutMs' of 2000 ms ran out`), so logs group by message. How long the
 * operation actually waited is `waitedMs`.
 *
 * @example What ran out, and how long it waited
 * ```ts
 * import { TimeoutError } from "@herdless/herdless";
 * const e = new TimeoutError("Command GET timed out: 'timeoutMs' of 1000 ms ran out", 1003, {
 *   setting: "timeoutMs",
 *   timeoutMs: 1000,
 * });
 * console.log(e.setting, e.timeoutMs, e.waitedMs); // "timeoutMs" 1000 1003
 * ```
 */
export class TimeoutError extends Error {
  /** How long the operation waited before giving up, in milliseconds. */
  readonly waitedMs: number;
  /**
   * The setting that ran out: `"timeoutMs"`, `"commandTimeoutMs"`, `"connectTimeoutMs"`, `"waitMs"`, or the one a
   * library named with `timeoutSetting`.
   */
  readonly setting: string;
  /** That setting's value, in milliseconds. */
  readonly timeoutMs: number;
  /**
   * A timeout, with what ran out and how long the operation waited.
   *
   * @param message what timed out and which setting ran out, with no measured duration.
   * @param waitedMs how long it waited, in ms.
   * @param options the `setting` and its `timeoutMs`; the `cause`: for a command that timed out while
   *   disconnected, the last socket error.
   */
  constructor(message: string, waitedMs: number, options?: TimeoutErrorOptions) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "TimeoutError";
    brand(this, "TimeoutError");
    this.waitedMs = waitedMs;
    this.setting = options?.setting ?? "timeoutMs";
    this.timeoutMs = options?.timeoutMs ?? waitedMs;
  }
}

/**
 * A timeout's message in its one form: what timed out, the setting and its
 * value; nothing measured, so every timeout of one setting reads the same
 * (`Command GET timed out: 'timeoutMs' of 2000 ms ran out`). Not re-exported:
 * both layers build their messages with it.
 *
 * @param what the subject, e.g. `"Command GET"`, `"Cannot get products:{..}:data"`.
 * @param setting the setting that ran out, e.g. `"waitMs"`.
 * @param timeoutMs its value.
 */
export function timeoutMessage(what: string, setting: string, timeoutMs: number): string {
  return `${what} timed out: '${setting}' of ${timeoutMs} ms ran out`;
}

/**
 * True when `e` is a {@linkcode TimeoutError} from any copy of herdless; the
 * `DOMException` of `AbortSignal.timeout()`, also named "TimeoutError", is not.
 *
 * @param e anything caught.
 * @returns whether it is our timeout (then `e.setting`, `e.timeoutMs` and `e.waitedMs` are there).
 * @example A foreign error of the same name is not one
 * ```ts
 * import { isTimeoutError, TimeoutError } from "@herdless/herdless";
 * const foreign = new DOMException("The operation timed out.", "TimeoutError");
 * console.log(isTimeoutError(new TimeoutError("late", 5)), isTimeoutError(foreign)); // true false
 * ```
 */
export function isTimeoutError(e: unknown): e is TimeoutError {
  return hasBrand(e, "TimeoutError");
}
