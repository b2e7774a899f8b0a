/**
 * The Sentinel client's options, their defaults, and their validation (once,
 * up front, with the setting named in the message). The sentinels' own
 * credentials and TLS come from their URLs; everything else is the data
 * node's, resolved as `connect()` resolves it.
 *
 * @module
 */
import { CONNECT_OPTIONS, type ConnectOptions, resolveConnectOptions, type ResolvedOptions } from "../options.ts";
import type { ConnectionEvent } from "../types.ts";
import { parseRedisUrl } from "../url.ts";
import { func, knownOptions, optionsObject, positiveInt, show } from "../shared/mod.ts";

/**
 * What a {@linkcode SentinelClient} reports: its data connection's events,
 * and `failover` when it moved to a new master (`from` and `to` are `host:port`).
 */
export type SentinelEvent =
  | ConnectionEvent
  | { readonly type: "failover"; readonly from: string; readonly to: string };

/** Options of {@linkcode connectSentinel}: where the sentinels are, which master group, and how to reach its master. */
export interface SentinelOptions extends Omit<ConnectOptions, "url" | "host" | "port" | "path" | "onEvent"> {
  /**
   * `redis://` or `rediss://` URLs of some of the group's sentinels. More are
   * learned from `SENTINEL sentinels` at each check: the ones its last
   * answer names, at most 32 besides those given (a sentinel that answers
   * with thousands cannot grow the list), entries without a valid host and
   * port left out. Credentials in a URL are that sentinel's own (`sentinel
   * requirepass`); `username`, `password`, `db` and `tls` of these options
   * are the data node's. A sentinel that names a master without a valid
   * host and port (1..65535) counts as failed: the next one is asked.
   */
  sentinels: readonly string[];
  /** The master group's name, as the sentinels monitor it (`sentinel monitor <name> ...`). */
  name: string;
  /**
   * How often the sentinels are asked again for the master (and for the
   * other sentinels), besides hearing `+switch-master`: a failover whose
   * message was missed is followed within this long. @default {1000}
   */
  checkIntervalMs?: number;
  /**
   * Hears the data connection's state (as `connect()`'s `onEvent`) and
   * `{ type: "failover", from, to }` when the client moved to a new master;
   * a throwing listener is ignored.
   */
  onEvent?: (event: SentinelEvent) => void;
}

/** One sentinel: where it listens and how to log in to it. */
export interface SentinelAddress {
  readonly host: string;
  readonly port: number;
  readonly username: string | undefined;
  readonly password: string | undefined;
  readonly tls: boolean;
}

/** Options with defaults applied and values checked. */
export interface ResolvedSentinelOptions {
  readonly name: string;
  readonly sentinels: readonly SentinelAddress[];
  /** The data node's options; host and port are filled in by the sentinels' answer. */
  readonly data: ResolvedOptions;
  readonly checkIntervalMs: number;
  readonly onEvent: ((event: SentinelEvent) => void) | undefined;
  /** As given, for `duplicate()`. */
  readonly given: SentinelOptions;
}

const WHERE = "connectSentinel";

/** Every key of {@linkcode SentinelOptions}: any other is refused, by name. */
const SENTINEL_OPTIONS: readonly string[] = [
  "sentinels",
  "name",
  "checkIntervalMs",
  "onEvent",
  ...CONNECT_OPTIONS.filter((k) => !["url", "host", "port", "path", "onEvent", "name"].includes(k)),
];

/**
 * Apply defaults to `connectSentinel()`'s argument and validate every field.
 *
 * @throws {RangeError | TypeError} naming the first bad setting.
 */
export function resolveSentinelOptions(options: SentinelOptions): ResolvedSentinelOptions {
  const given = optionsObject<SentinelOptions>(WHERE, options) as SentinelOptions;
  for (const key of ["url", "host", "port", "path"]) {
    if ((given as unknown as Record<string, unknown>)[key] !== undefined) {
      throw new TypeError(`Cannot connect to Sentinel: '${key}' is not an option here, the sentinels name the master`);
    }
  }
  knownOptions("connectSentinel()", given, SENTINEL_OPTIONS);
  if (typeof given.name !== "string" || given.name === "") {
    throw new TypeError(`Cannot connect to Sentinel: 'name' must be the master group's name, got ${show(given.name)}`);
  }
  const list = given.sentinels;
  if (!Array.isArray(list) || list.length === 0) {
    throw new TypeError(
      `Cannot connect to Sentinel: 'sentinels' must be a non-empty array of redis:// or rediss:// URLs, got ${
        show(list)
      }`,
    );
  }
  const sentinels = list.map((url, i) => sentinelAddress(url, i));
  const { sentinels: _s, name: _n, checkIntervalMs: _c, onEvent, ...rest } = given;
  const data = resolveConnectOptions(rest, "connectSentinel()");
  return {
    name: given.name,
    sentinels,
    data,
    checkIntervalMs: positiveInt(WHERE, "checkIntervalMs", given.checkIntervalMs ?? 1000),
    onEvent: onEvent === undefined ? undefined : func<(event: SentinelEvent) => void>(WHERE, "onEvent", onEvent),
    given: { ...given },
  };
}

function sentinelAddress(url: unknown, i: number): SentinelAddress {
  if (typeof url !== "string" || !/^rediss?:\/\//i.test(url)) {
    throw new TypeError(
      `Cannot connect to Sentinel: 'sentinels[${i}]' must be a redis:// or rediss:// URL, got ${show(url)}`,
    );
  }
  const parsed = parseRedisUrl(url);
  return {
    host: parsed.host ?? "127.0.0.1",
    port: parsed.port ?? 26379,
    username: parsed.username,
    password: parsed.password,
    tls: parsed.tls === true,
  };
}
