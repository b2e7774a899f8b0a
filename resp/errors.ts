/**
 * Errors raised by the RESP client. Each sets `name`, keeps `cause`, and has
 * an `isXxxError` check that works across two loaded copies of the package
 * (a Deno copy and an npm copy), where `instanceof` alone would fail.
 *
 * @module
 */

/** Options shared by the error constructors. */
export interface HerdlessErrorOptions {
  /** The error that caused this one. */
  cause?: unknown;
}

function hasName(value: unknown, name: string): boolean {
  return value instanceof Error && value.name === name;
}

/**
 * An error reply from the server (`-ERR ...`, `-NOSCRIPT ...`, `!` blob
 * errors). `code` is the first word of the message, as Redis uses it.
 *
 * @example Branch on the code
 * ```ts
 * import { RedisReplyError } from "./errors.ts";
 * const e = new RedisReplyError("NOSCRIPT No matching script");
 * console.log(e.code); // "NOSCRIPT"
 * ```
 */
export class RedisReplyError extends Error {
  /** The first word of the reply, e.g. `ERR`, `WRONGTYPE`, `NOSCRIPT`, `MOVED`. */
  readonly code: string;
  constructor(message: string, options?: HerdlessErrorOptions) {
    super(message, options);
    this.name = "RedisReplyError";
    const space = message.indexOf(" ");
    this.code = space === -1 ? message : message.slice(0, space);
  }
}

/** True when `e` is a {@linkcode RedisReplyError} from any copy of herdless. */
export function isRedisReplyError(e: unknown): e is RedisReplyError {
  return hasName(e, "RedisReplyError");
}

/**
 * The connection was lost, could not be made, or was closed. A command
 * rejected with this error may or may not have run on the server when it had
 * already been written; it is never sent again by the client.
 */
export class ConnectionError extends Error {
  constructor(message: string, options?: HerdlessErrorOptions) {
    super(message, options);
    this.name = "ConnectionError";
  }
}

/** True when `e` is a {@linkcode ConnectionError} from any copy of herdless. */
export function isConnectionError(e: unknown): e is ConnectionError {
  return hasName(e, "ConnectionError");
}

/**
 * The byte stream from the server is not valid RESP. `offset` is the position
 * of the offending byte counted from the start of the connection's stream.
 * The connection that saw it is closed.
 */
export class ProtocolError extends Error {
  /** Byte offset in the stream (from the start of the connection) of the offending byte. */
  readonly offset: number;
  constructor(message: string, offset: number, options?: HerdlessErrorOptions) {
    super(`${message} at byte offset ${offset}`, options);
    this.name = "ProtocolError";
    this.offset = offset;
  }
}

/** True when `e` is a {@linkcode ProtocolError} from any copy of herdless. */
export function isProtocolError(e: unknown): e is ProtocolError {
  return hasName(e, "ProtocolError");
}

/**
 * A deadline ran out: a command timeout, a connect timeout, or a cache
 * caller's wait for another owner's load. A waiter that times out never falls
 * through to the origin.
 */
export class TimeoutError extends Error {
  /** How long the operation waited before giving up, in milliseconds. */
  readonly waitedMs: number;
  constructor(message: string, waitedMs: number, options?: HerdlessErrorOptions) {
    super(message, options);
    this.name = "TimeoutError";
    this.waitedMs = waitedMs;
  }
}

/** True when `e` is a {@linkcode TimeoutError} from any copy of herdless. */
export function isTimeoutError(e: unknown): e is TimeoutError {
  return hasName(e, "TimeoutError");
}
