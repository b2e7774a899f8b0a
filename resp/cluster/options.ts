/**
 * Options of `connectCluster`, their defaults, and their validation (once,
 * up front, with the setting named in the message).
 *
 * @module
 */
import { type ConnectOptions, resolveConnectOptions, type ResolvedOptions } from "../options.ts";
import { type NodeAddress, nodeAddress } from "./slot_map.ts";
import { knownOptions, nonNegativeInt, optionsObject, positiveInt, show } from "../shared/mod.ts";

/**
 * Options of `connectCluster`. Connection settings (`username`, `password`,
 * `tls`, `resp`, `name`, timeouts, `reconnect`) apply to every node; a
 * `rediss://` seed turns TLS on and a seed URL's user and password are used
 * unless given here.
 */
export interface ClusterOptions extends
  Pick<
    ConnectOptions,
    | "username"
    | "password"
    | "tls"
    | "resp"
    | "name"
    | "connectTimeoutMs"
    | "commandTimeoutMs"
    | "reconnect"
    | "onEvent"
    | "maxBulkBytes"
  > {
  /** Nodes to read the slot map from: `redis://host:port` URLs or `host:port`. One reachable node is enough. */
  seeds: readonly string[];
  /** Most MOVED/ASK redirections followed for one command before its last error is returned. @default {16} */
  maxRedirections?: number;
  /**
   * Pause before trying a command again after `TRYAGAIN`, `CLUSTERDOWN`,
   * `LOADING` or an unreachable node, and the least time between two reads of
   * the slot map.
   * @default {100}
   */
  retryDelayMs?: number;
  /**
   * Most commands waiting for the cluster to be able to serve them (a node
   * reconnecting, a failover ending), or `false` to fail them at once.
   * @default {10000}
   */
  offlineQueue?: number | false;
  /** A waiting command fails with `ConnectionError` after this long; 0 means it waits as long as its own timeout allows. @default {10000} */
  offlineTimeoutMs?: number;
}

/** Options with defaults applied and values checked. */
export interface ResolvedClusterOptions {
  seeds: NodeAddress[];
  /** Per-node connection options, host and port replaced for each node. */
  node: ResolvedOptions;
  maxRedirections: number;
  retryDelayMs: number;
  offlineQueue: number;
  offlineTimeoutMs: number;
  commandTimeoutMs: number;
  /**
   * A node (`host:port`) every slot map read asks first. Not a public
   * setting: tests use it to make the client read the view of a node that
   * has not heard of a resharding yet, which otherwise happens only by chance.
   */
  mapSourceFirst?: string;
}

const WHERE = "connect to cluster";

/** The connection settings a cluster shares with every node, passed on to `connect()`'s resolution. */
const SHARED = [
  "username",
  "password",
  "tls",
  "resp",
  "name",
  "connectTimeoutMs",
  "commandTimeoutMs",
  "reconnect",
  // Each node's client reports its own connection; `server` tells them apart.
  "onEvent",
  "maxBulkBytes",
] as const satisfies readonly (keyof ClusterOptions)[];

/** Every key of {@linkcode ClusterOptions}: any other is refused, by name. */
const CLUSTER_OPTIONS: readonly (keyof ClusterOptions)[] = [
  "seeds",
  ...SHARED,
  "maxRedirections",
  "retryDelayMs",
  "offlineQueue",
  "offlineTimeoutMs",
];

function seedUrl(seed: unknown, i: number): string {
  if (typeof seed !== "string" || seed.length === 0) {
    throw new TypeError(
      `Cannot connect to cluster: 'seeds[${i}]' must be a non-empty string, got ${
        typeof seed === "string" ? show(seed) : typeof seed
      }`,
    );
  }
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(seed) ? seed : `redis://${seed}`;
}

/**
 * Apply defaults to `connectCluster()`'s argument and validate every field.
 *
 * @throws {RangeError | TypeError} naming the first bad setting.
 */
export function resolveClusterOptions(target: readonly string[] | ClusterOptions): ResolvedClusterOptions {
  const o: Partial<ClusterOptions> = Array.isArray(target)
    ? { seeds: target as readonly string[] }
    : { ...optionsObject<ClusterOptions>(WHERE, target) };
  if (!Array.isArray(target)) knownOptions("connectCluster()", o, CLUSTER_OPTIONS);
  if (!Array.isArray(o.seeds) || o.seeds.length === 0) {
    throw new TypeError(`Cannot connect to cluster: 'seeds' must be a non-empty array of URLs or host:port strings`);
  }
  const common: ConnectOptions = {};
  for (const k of SHARED) {
    if (o[k] !== undefined) (common as Record<string, unknown>)[k] = o[k];
  }
  const seeds: NodeAddress[] = [];
  let first: ResolvedOptions | undefined;
  o.seeds.forEach((seed, i) => {
    const url = seedUrl(seed, i);
    if (url.startsWith("unix:") || url.startsWith("redis+unix:")) {
      throw new TypeError(
        `Cannot connect to cluster: 'seeds[${i}]' must be a TCP address, got ${show(seed)}`,
      );
    }
    // Validates every shared setting too, with connect()'s own messages.
    const r = resolveConnectOptions({ ...common, url, offlineQueue: false }, "connectCluster()");
    if (r.db !== 0) {
      throw new RangeError(`Cannot connect to cluster: 'seeds[${i}]' selects db ${r.db}; a cluster has only db 0`);
    }
    first ??= r;
    seeds.push(nodeAddress(r.host, r.port));
  });
  const offlineQueue = o.offlineQueue === false ? 0 : nonNegativeInt(WHERE, "offlineQueue", o.offlineQueue ?? 10_000);
  return {
    seeds,
    node: first!,
    maxRedirections: positiveInt(WHERE, "maxRedirections", o.maxRedirections ?? 16),
    retryDelayMs: positiveInt(WHERE, "retryDelayMs", o.retryDelayMs ?? 100),
    offlineQueue,
    offlineTimeoutMs: nonNegativeInt(WHERE, "offlineTimeoutMs", o.offlineTimeoutMs ?? 10_000),
    commandTimeoutMs: first!.commandTimeoutMs,
  };
}
