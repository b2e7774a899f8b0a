/**
 * The shapes shared by the encoder, the decoder, the client and every user of
 * a Redis connection (strategies talk to Redis only through {@linkcode RedisLike}).
 *
 * @module
 */
import type { RedisReplyError } from "./errors.ts";

/** One argument of a command: strings are sent as UTF-8, numbers in decimal. */
export type Arg = string | number | Uint8Array;

/** A decoded RESP3 map: an object without a prototype, keys as strings. */
export interface ReplyMap {
  /** The value under a key; keys that were numbers or bytes are their text. */
  [key: string]: Reply;
}

/**
 * A decoded reply. Integers are `number` when they fit in 2^53 and `bigint`
 * beyond; big numbers are `bigint`; doubles are `number` (`Infinity`, `NaN`
 * included); sets are arrays; verbatim strings lose their format prefix; an
 * error inside an aggregate is a {@linkcode RedisReplyError} value in place.
 */
export type Reply =
  | string
  | number
  | bigint
  | boolean
  | null
  | Uint8Array
  | RedisReplyError
  | Reply[]
  | ReplyMap;

/**
 * Per-command options. A key not named here is refused (`Unknown option
 * 'timeOutMs' for send(); did you mean 'timeoutMs'?`), as is a field of the
 * wrong type, before anything is sent.
 */
export interface SendOptions {
  /** Abort the command; it rejects with `signal.reason`. A command not yet written is never written. */
  signal?: AbortSignal | undefined;
  /** Reject with `TimeoutError` this many ms after the call (not after the write). Overrides the client's `commandTimeoutMs`. */
  timeoutMs?: number | undefined;
  /** Return every bulk string of the reply tree as `Uint8Array` instead of a string. */
  buffers?: boolean | undefined;
  /** Receives the RESP3 attribute (`|`) that annotated this reply, kept apart from the reply itself. */
  onAttribute?: ((attribute: ReplyMap) => void) | undefined;
  /**
   * Grow this command's deadline with the size of its reply: when the reply
   * announces a payload of at least 1 MiB (the `$<length>` header of a
   * value, before its bytes), the deadline moves later by
   * ceil(length / bytesPerMs) ms, for each such payload. A read cannot know
   * a value's size before asking; without this, a value that takes longer
   * to arrive than `timeoutMs` fails every read. Replies under 1 MiB, and
   * commands without it, keep a flat deadline at no cost. A positive number
   * of bytes per millisecond (10_000: 10 MB/s). Our clients only: the
   * adapters accept it and keep a flat deadline (ioredis, node-redis and
   * Bun's client show no reply before it is whole).
   */
  bytesPerMs?: number | undefined;
  /**
   * The name of the setting `timeoutMs` came from, for the `TimeoutError`'s
   * `setting` and message when it runs out: a library passing its own
   * deadline names it (a cache built by `pipeline()` passes
   * `"commandTimeoutMs"`, its own setting), so its users read the setting
   * they can change. Ignored without `timeoutMs`.
   * @default {"timeoutMs"}
   */
  timeoutSetting?: string | undefined;
}

/**
 * Anything that can send a command and return its reply. Our
 * `RedisClient` and `ClusterClient` implement it; so does a few-line
 * adapter over ioredis or node-redis.
 *
 * @example An adapter over ioredis
 * ```ts
 * import type { Arg, RedisLike, Reply } from "@herdless/herdless";
 * declare const ioredis: { call(name: string, ...args: (string | number | Uint8Array)[]): Promise<unknown> };
 * const redis: RedisLike = {
 *   send: ([name, ...args]: readonly Arg[]) => ioredis.call(String(name), ...args) as Promise<Reply>,
 * };
 * ```
 */
export interface RedisLike {
  /**
   * Send one command and resolve with its reply.
   *
   * @param command the command and its arguments, e.g. `["GET", key]`.
   * @param options a timeout, an abort signal, bytes instead of strings; an adapter honours what it can.
   * @returns the decoded reply; a server error rejects with `RedisReplyError`.
   */
  send(command: readonly Arg[], options?: SendOptions): Promise<Reply>;
}

/** Receives what the server's client tracking (`CLIENT TRACKING ON`) reports. */
export interface TrackingListener {
  /** The server says these keys changed, expired or were evicted: anything read from them before is stale. */
  invalidate(keys: readonly string[]): void;
  /**
   * Any key may have changed unseen: a FLUSHALL or FLUSHDB (the server's null
   * invalidation), a lost connection, a `CLIENT TRACKING` the server refused,
   * a cluster topology change. Forget everything read before.
   */
  reset(reason: string): void;
  /** The server refused `CLIENT TRACKING` (after `reset`): `error` is its reply, to tell a refusal for good. */
  refused?(error: unknown): void;
}

/**
 * A connection whose reads the server can track for client-side caching
 * (RESP3 only): our `RedisClient` and `ClusterClient` created with `resp: 3`.
 */
export interface TrackingClient extends RedisLike {
  /**
   * Turn `CLIENT TRACKING ON` for every connection, now and after each
   * reconnect (before any other command), and report invalidations to
   * `listener` until the returned function is called. That function's
   * promise settles (never rejects) once the server has answered the
   * `CLIENT TRACKING OFF` it sends, so a `close()` can wait for it.
   *
   * @throws {TypeError} (as a rejection) on a RESP2 connection.
   */
  track(listener: TrackingListener): Promise<() => Promise<void>>;
  /** True while every connection's reads are tracked (false while one is down or was refused tracking). */
  readonly tracking: boolean;
}

/**
 * What a subscriber of the `herdless:command` TracingChannel receives for
 * each command a `RedisClient` sends: its name (never its arguments) and the
 * server; `result` or `error` is set on the same object when it settles.
 *
 * @example Count commands by name
 * ```ts
 * import { channel } from "node:diagnostics_channel";
 * import { type CommandTraceContext, connect } from "@herdless/herdless";
 * const counts = new Map<string, number>();
 * const count = (c: unknown) => {
 *   const { command } = c as CommandTraceContext;
 *   counts.set(command, (counts.get(command) ?? 0) + 1);
 * };
 * channel("tracing:herdless:command:start").subscribe(count);
 * const redis = await connect(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
 * await redis.send(["SET", "k", "v"]);
 * await redis.send(["GET", "k"]);
 * channel("tracing:herdless:command:start").unsubscribe(count);
 * console.log(counts.get("SET"), counts.get("GET")); // 1 1
 * await redis.close();
 * ```
 */
export interface CommandTraceContext {
  /** The command's name as sent, upper-cased (`"GET"`, `"EVALSHA"`); never a key or a value. */
  readonly command: string;
  /** The server: `host:port`, or the unix socket path. */
  readonly server: string;
  /** The reply, set when the command succeeds (by `tracePromise`). */
  result?: unknown;
  /** The error, set when the command fails. */
  error?: unknown;
}

/**
 * A change in a `RedisClient`'s connection, as `connect({ onEvent })` and
 * `client.onEvent()` report it. `server` is `host:port` or the socket path.
 *
 * - `connect`: a socket is open; the handshake (AUTH, HELLO, SELECT) follows.
 * - `ready`: the handshake is done and commands flow; `generation` counts the connections so far.
 * - `disconnect`: a ready connection was lost; `cause` is the socket error, when there was one.
 * - `reconnecting`: the next attempt starts in `delayMs`; `attempt` counts from 1 since the last ready connection.
 * - `error`: a connection attempt failed (nothing listens, a timeout, the server refused the password); `error` says why.
 * - `name-refused`: a RESP2 `CLIENT SETNAME` was refused (an ACL without `client|setname`, `CLIENT` renamed
 *   away); the connection goes on without the name, `error` is the server's reply.
 * - `resp-fallback`: the server refused `HELLO 3` (older than Redis 6, a proxy that does not know HELLO) and `resp` was not given: the client speaks RESP2 from now on (no client tracking, so
 *   `near()` goes by invalidation messages); `error` is the server's reply. Comes before that connection's `ready`.
 */
export type ConnectionEvent =
  | { readonly type: "connect"; readonly server: string }
  | { readonly type: "ready"; readonly server: string; readonly generation: number }
  | { readonly type: "disconnect"; readonly server: string; readonly cause: unknown }
  | { readonly type: "reconnecting"; readonly server: string; readonly attempt: number; readonly delayMs: number }
  | { readonly type: "error"; readonly server: string; readonly error: unknown }
  | { readonly type: "name-refused"; readonly server: string; readonly name: string; readonly error: unknown }
  | { readonly type: "resp-fallback"; readonly server: string; readonly error: unknown };
