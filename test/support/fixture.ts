/**
 * The one way a test file gets a Redis: `useRedis(suite)` starts a
 * redis-server of the suite's own (a free port, so suites never share state)
 * before its first test, opens the clients the file asks for, names a fresh
 * namespace per test with `ns()`, and closes clients and server in an after
 * hook, which uvu runs even when a test or another hook failed.
 * `sharedCluster()` does the same for a Redis Cluster that several suites of
 * a file share.
 */
import type { Test } from "uvu";
import { connect, type RedisClient } from "../../resp/client.ts";
import { type ClusterClient, connectCluster } from "../../resp/cluster/client.ts";
import type { ConnectOptions } from "../../resp/options.ts";
import { type RedisCluster, startCluster, type StartClusterOptions } from "./redis_cluster.ts";
import { type RedisServer, startRedis, type StartRedisOptions } from "./redis_server.ts";

/** What {@linkcode useRedis} gives a suite; every field is ready from its first test on. */
export interface RedisFixture {
  /** The suite's server (to kill, pause or restart it). */
  readonly server: RedisServer;
  /** `redis://127.0.0.1:<port>` of the server. */
  readonly url: string;
  /** The first client the fixture opened. */
  readonly redis: RedisClient;
  /** A second client, standing for another process: open with `clients: 2`. */
  readonly other: RedisClient;
  /** A namespace no other test of the suite uses, so tests never see each other's keys. */
  ns(): string;
  /**
   * Open one more client (RESP3 unless `options` say otherwise; to the
   * server unless they name another url, a proxy's), closed before the
   * server stops.
   */
  client(options?: ConnectOptions): Promise<RedisClient>;
}

/** Options for {@linkcode useRedis}. */
export interface RedisFixtureOptions {
  /** Start of every `ns()` name, so a key seen in `MONITOR` tells which file wrote it. @default {"ns"} */
  prefix?: string;
  /** Clients opened before the first test: 0, 1 (`redis`) or 2 (`redis`, `other`). @default {1} */
  clients?: 0 | 1 | 2;
  /** How those clients connect (the url is the server's). @default {{ resp: 3 }} */
  connect?: Omit<ConnectOptions, "url">;
  /** Options of the server (extra arguments, TLS). */
  server?: StartRedisOptions;
}

/** The fields the fixture also puts in the suite's uvu context, for tests written as `async ({ server, redis }) => ...`. */
export interface RedisContext {
  server: RedisServer;
  redis: RedisClient;
  other: RedisClient;
}

/** A function that names a fresh namespace at each call: `${prefix}1`, `${prefix}2`, ... */
export function namer(prefix: string): () => string {
  let n = 0;
  return () => `${prefix}${++n}`;
}

/** Connect with RESP3 (push wake-ups) or RESP2 (polling). */
export function client(url: string, resp: 2 | 3 = 3): Promise<RedisClient> {
  return connect({ url, resp });
}

/**
 * Give `suite` a redis-server and clients of its own: started in a before
 * hook, closed in an after hook. uvu runs each kind of hook in registration
 * order, so a file registers its own before hooks that need the server after
 * calling this, and its after hooks that need the server before. Clients a
 * file opens with `client()` are closed before the server stops.
 */
// deno-lint-ignore no-explicit-any
export function useRedis(suite: Test<any>, options: RedisFixtureOptions = {}): RedisFixture {
  const { prefix = "ns", clients = 1, connect: how = { resp: 3 } } = options;
  let server: RedisServer | undefined;
  const opened: RedisClient[] = [];
  const ns = namer(prefix);
  const ready = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`useRedis(): ${what} is not open (before hook not run, or not asked for)`);
    return value;
  };
  const open = async (o: ConnectOptions) => {
    const c = await connect({ url: ready(server, "the server").url, ...o });
    opened.push(c);
    return c;
  };
  suite.before(async (ctx: Partial<RedisContext>) => {
    server = await startRedis(options.server);
    ctx.server = server;
    if (clients >= 1) ctx.redis = await open(how);
    if (clients >= 2) ctx.other = await open(how);
  });
  suite.after(async () => {
    for (const c of opened.splice(0)) c.destroy();
    // A test may have left it paused (SIGSTOP): a stopped process cannot shut down.
    server?.signal("SIGCONT");
    await server?.stop();
    server = undefined;
  });
  return {
    get server() {
      return ready(server, "the server");
    },
    get url() {
      return ready(server, "the server").url;
    },
    get redis() {
      return ready(clients >= 1 ? opened[0] : undefined, "'redis' (clients: 1)");
    },
    get other() {
      return ready(clients >= 2 ? opened[1] : undefined, "'other' (clients: 2)");
    },
    ns,
    client: (o = { resp: 3 }) => open(o),
  };
}

/** What {@linkcode sharedCluster} opens: the cluster, and the clients `open` made on it. */
export type ClusterContext<T> = T & { cluster: RedisCluster };

/** Options for {@linkcode sharedCluster}. */
export interface SharedClusterOptions<T> {
  /** Options of the cluster (primaries, replicas). */
  start?: StartClusterOptions;
  /** Start of every `ns()` name. @default {"ns"} */
  prefix?: string;
  /** Open the clients the tests use, once the cluster is up. */
  open(cluster: RedisCluster): Promise<T>;
  /** Close them, before the cluster stops. */
  close(opened: T): void | Promise<void>;
}

/** A cluster several suites of one file share; see {@linkcode sharedCluster}. */
export interface SharedCluster<T> {
  /** The cluster and its clients, once a suite's before hook started them. */
  readonly current: ClusterContext<T>;
  /**
   * Give `suite` the cluster: its before hook starts it (the first suite
   * does; the others get the same one) and merges it into the uvu context.
   * The suite passed with `last` stops it in its after hook.
   */
  // deno-lint-ignore no-explicit-any
  use(suite: Test<any>, options?: { last?: boolean }): void;
  /** A namespace no other test of the file uses. */
  ns(): string;
}

/**
 * One Redis Cluster for every suite of a file that asks for it: a cluster
 * takes seconds to start, so the suites share one, started by the first
 * suite's before hook and stopped by the last suite's after hook (which uvu
 * runs even when a test failed).
 */
export function sharedCluster<T extends object>(options: SharedClusterOptions<T>): SharedCluster<T> {
  let started: Promise<ClusterContext<T>> | undefined;
  let current: ClusterContext<T> | undefined;
  const start = () =>
    started ??= (async () => {
      const cluster = await startCluster(options.start);
      try {
        return current = { ...(await options.open(cluster)), cluster };
      } catch (error) {
        await cluster.stop();
        throw error;
      }
    })();
  const stop = async () => {
    const ctx = await started?.catch(() => undefined);
    started = current = undefined;
    if (ctx === undefined) return;
    try {
      await options.close(ctx);
    } finally {
      await ctx.cluster.stop();
    }
  };
  return {
    get current() {
      if (current === undefined) throw new Error("sharedCluster(): the cluster is not started (before hook not run)");
      return current;
    },
    use(suite, { last = false } = {}) {
      suite.before(async (ctx: object) => {
        Object.assign(ctx, await start());
      });
      if (last) suite.after(stop);
    },
    ns: namer(options.prefix ?? "ns"),
  };
}

/** Two cluster clients standing for two processes: `a` on RESP3 (tracking, push), `b` on RESP2 (polling). */
export interface TwoProcesses {
  /** One process' cluster client: RESP3, so its node connections track (near(), push wake-ups). */
  a: ClusterClient;
  /** Another process' client: RESP2 (no tracking: polling, invalidation messages), seeded from the replicas. */
  b: ClusterClient;
}

/**
 * The cluster the strategy suites share: {@linkcode sharedCluster} with the
 * clients of {@linkcode TwoProcesses}; `b` enters through the replicas' seeds,
 * so the two learn the slot map from different nodes.
 */
export function twoProcessCluster(prefix: string, name?: string): SharedCluster<TwoProcesses> {
  return sharedCluster<TwoProcesses>({
    prefix,
    open: async (cluster) => ({
      a: await connectCluster({ seeds: cluster.seeds, resp: 3, ...(name === undefined ? {} : { name }) }),
      b: await connectCluster({ seeds: cluster.seeds.slice(3), resp: 2 }),
    }),
    close({ a, b }) {
      a.destroy();
      b.destroy();
    },
  });
}
