/**
 * Connection options, their defaults, and their validation (once, up front,
 * with the setting named in the message).
 *
 * @module
 */
import type { ConnectionOptions as TlsOptions } from "node:tls";
import type { ConnectionEvent } from "./types.ts";
import { parseRedisUrl, type RedisUrl } from "./url.ts";
import {
  boolean,
  func,
  intInRange,
  isWorkerd,
  knownOptions,
  nonNegativeInt,
  optionalString,
  optionsObject,
  positiveInt,
  show,
} from "./shared/mod.ts";

/** Reconnection backoff: capped, jittered exponential. */
export interface ReconnectOptions {
  /** First delay before reconnecting. @default {50} */
  minMs?: number;
  /** Largest delay between attempts. @default {2000} */
  maxMs?: number;
}

/**
 * Options of {@linkcode connect}. A `url` is read first; explicit fields
 * override it. Where and as whom to connect (`host`, `port`, `path`,
 * `username`, `password`, `db`) are the fields a URL can say:
 * {@linkcode RedisUrl}'s.
 */
export interface ConnectOptions extends Omit<RedisUrl, "tls"> {
  /** `redis://`, `rediss://` or `unix://` URL. */
  url?: string;
  /** `true` or node:tls options to connect with TLS. @default {false} */
  tls?: boolean | TlsOptions;
  /**
   * Protocol. 3 sends `HELLO 3`: push replies (pub/sub on the command
   * connection) and client tracking, which `near()` needs to hear other
   * writers. Left out, the client asks for RESP3 and falls back to RESP2
   * where `HELLO 3` is refused (a server older than Redis 6, a proxy that
   * does not know HELLO), with a `resp-fallback`
   * event naming the refusal; the client then speaks RESP2 for good
   * (`client.resp` says which). Given, it is what is spoken: `resp: 3` on a
   * server that refuses HELLO fails `connect()`.
   *
   * On workerd (Cloudflare Workers) the default is 2: a Worker connects per
   * request, and RESP3 there serves only `near()`, whose tracking would add
   * its commands (`CLIENT TRACKING`, and the tracked reads' invalidations)
   * to every request for entries that die with the isolate's request
   * anyway; RESP2 keeps the first request's handshake to what the commands
   * need. Give `resp: 3` to have it anyway.
   * @default {3, falling back to 2 (2 on workerd)}
   */
  resp?: 2 | 3;
  /** Sent as `CLIENT SETNAME` on every (re)connect. */
  name?: string;
  /** Give up one connection attempt after this long. @default {10000} */
  connectTimeoutMs?: number;
  /** Default per-command timeout, counted from the call; 0 means none. @default {0} */
  commandTimeoutMs?: number;
  /** Most commands held while disconnected, or `false` to fail them at once. @default {10000} */
  offlineQueue?: number | false;
  /** A command held while disconnected fails with `ConnectionError` after this long; 0 means it waits for the reconnect. @default {10000} */
  offlineTimeoutMs?: number;
  /** Reconnect after a loss, or `false` to stay closed. @default {{ minMs: 50, maxMs: 2000 }} */
  reconnect?: ReconnectOptions | false;
  /**
   * `connect()` resolves at once, without I/O; the first command opens the
   * socket, and the handshake (HELLO or AUTH, SELECT, CLIENT TRACKING where
   * asked for) leaves in one write with the commands issued meanwhile. A
   * refused connection or a refused handshake rejects those commands with
   * its `ConnectionError`; later commands wait for the reconnect. The form a
   * Cloudflare Worker wants: it connects per request.
   * @default {false}
   */
  lazyConnect?: boolean;
  /**
   * Hears the connection's state: connect, ready, disconnect (with the
   * cause), reconnecting (with the attempt), error. Given here it hears the
   * first attempt too; a throwing listener is ignored.
   */
  onEvent?: (event: ConnectionEvent) => void;
  /**
   * Largest payload accepted in a reply, in bytes: a bulk, verbatim or
   * streamed string, a blob error, and a simple string or error line
   * (never fewer than 65,535 bytes for those). A larger one is a
   * `ProtocolError` naming the limit and the byte offset beyond it, and the
   * connection is closed. Redis' own `proto-max-bulk-len` default.
   * @default {536870912}
   */
  maxBulkBytes?: number;
}

/** Options with defaults applied and values checked: what `RedisClient` runs on. */
export interface ResolvedOptions {
  host: string;
  port: number;
  path: string | undefined;
  username: string | undefined;
  password: string | undefined;
  db: number;
  tls: TlsOptions | undefined;
  /** What is spoken: mutable, since a refused HELLO switches a client with `respFallback` to 2 for good. */
  resp: 2 | 3;
  /** `resp` was not given: a refused `HELLO 3` falls back to RESP2 instead of failing. */
  respFallback: boolean;
  name: string | undefined;
  lazyConnect: boolean;
  connectTimeoutMs: number;
  commandTimeoutMs: number;
  offlineQueue: number;
  offlineTimeoutMs: number;
  reconnect: { minMs: number; maxMs: number } | false;
  onEvent: ((event: ConnectionEvent) => void) | undefined;
  maxBulkBytes: number;
  /**
   * Where to connect, asked before every attempt (the Sentinel client asks
   * the sentinels); `host` and `port` are then replaced by its answer.
   */
  locate?: (() => Promise<{ host: string; port: number }>) | undefined;
  /** The role the server must report (`ROLE`, in the handshake): a replica is refused. */
  role?: "master" | undefined;
}

const WHERE = "connect";

/** Every key of {@linkcode ConnectOptions}: any other is refused, by name. */
export const CONNECT_OPTIONS: readonly (keyof ConnectOptions)[] = [
  "url",
  "host",
  "port",
  "path",
  "username",
  "password",
  "db",
  "tls",
  "resp",
  "name",
  "connectTimeoutMs",
  "commandTimeoutMs",
  "offlineQueue",
  "offlineTimeoutMs",
  "reconnect",
  "lazyConnect",
  "onEvent",
  "maxBulkBytes",
];

const RECONNECT_OPTIONS: readonly (keyof ReconnectOptions)[] = ["minMs", "maxMs"];

/**
 * Apply defaults to `connect()`'s argument and validate every field.
 *
 * @param target `connect()`'s argument.
 * @param caller the public function the options were given to, for unknown-option messages.
 * @throws {RangeError | TypeError} naming the first bad setting.
 */
export function resolveConnectOptions(
  target: string | ConnectOptions | undefined,
  caller = "connect()",
): ResolvedOptions {
  if (typeof target === "object" && target !== null && !Array.isArray(target)) {
    knownOptions(caller, target, CONNECT_OPTIONS);
  }
  const given: ConnectOptions = typeof target === "string"
    ? { url: target }
    : { ...optionsObject<ConnectOptions>(WHERE, target) };
  const fromUrl = given.url === undefined ? {} : parseRedisUrl(given.url);
  const o = { ...fromUrl, ...stripUndefined(given) } as ConnectOptions;

  const port = intInRange(WHERE, "port", o.port ?? 6379, 1, 65535);
  const resp = o.resp ?? (isWorkerd() ? 2 : 3);
  if (resp !== 2 && resp !== 3) throw new RangeError(`Cannot connect: 'resp' must be 2 or 3, got ${show(resp)}`);
  const offlineQueue = o.offlineQueue === false ? 0 : nonNegativeInt(WHERE, "offlineQueue", o.offlineQueue ?? 10_000);
  let reconnect: ResolvedOptions["reconnect"] = false;
  if (o.reconnect !== false) {
    const r = o.reconnect === undefined || o.reconnect === (true as unknown) ? {} : o.reconnect;
    if (typeof r !== "object" || r === null || Array.isArray(r)) {
      throw new TypeError(`Cannot connect: 'reconnect' must be false or an object ({ minMs, maxMs }), got ${show(r)}`);
    }
    knownOptions(caller, r, RECONNECT_OPTIONS, "reconnect.");
    const minMs = positiveInt(WHERE, "reconnect.minMs", r.minMs ?? 50);
    const maxMs = positiveInt(WHERE, "reconnect.maxMs", r.maxMs ?? 2000);
    if (maxMs < minMs) {
      throw new RangeError(`Cannot connect: 'reconnect.maxMs' must be >= 'reconnect.minMs' (${minMs}), got ${maxMs}`);
    }
    reconnect = { minMs, maxMs };
  }
  const tls = o.tls === true ? {} : o.tls === false || o.tls === undefined ? undefined : o.tls;
  if (tls !== undefined && typeof tls !== "object") {
    throw new TypeError(`Cannot connect: 'tls' must be a boolean or node:tls options, got ${typeof tls}`);
  }
  return {
    host: optionalString(WHERE, "host", o.host) ?? "127.0.0.1",
    port,
    path: optionalString(WHERE, "path", o.path),
    username: optionalString(WHERE, "username", o.username),
    password: optionalString(WHERE, "password", o.password),
    db: nonNegativeInt(WHERE, "db", o.db ?? 0),
    tls,
    resp,
    respFallback: o.resp === undefined && resp === 3,
    name: optionalString(WHERE, "name", o.name),
    lazyConnect: boolean(WHERE, "lazyConnect", o.lazyConnect ?? false),
    connectTimeoutMs: positiveInt(WHERE, "connectTimeoutMs", o.connectTimeoutMs ?? 10_000),
    commandTimeoutMs: nonNegativeInt(WHERE, "commandTimeoutMs", o.commandTimeoutMs ?? 0),
    offlineQueue,
    offlineTimeoutMs: nonNegativeInt(WHERE, "offlineTimeoutMs", o.offlineTimeoutMs ?? 10_000),
    reconnect,
    onEvent: o.onEvent === undefined ? undefined : func<(event: ConnectionEvent) => void>(WHERE, "onEvent", o.onEvent),
    maxBulkBytes: intInRange(WHERE, "maxBulkBytes", o.maxBulkBytes ?? 536870912, 0, Number.MAX_SAFE_INTEGER),
  };
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  const out: Partial<T> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}
