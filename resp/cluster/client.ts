/**
 * A Redis Cluster client: routes each command to the primary that owns its
 * keys' slot over one pipelined {@linkcode RedisClient} per node, follows
 * MOVED and ASK, and waits out failovers and migrations within bounds.
 *
 * @module
 */
import type { PushListener } from "../client.ts";
import { ClusterTracking } from "./tracking.ts";
import { ClusterNodes } from "./nodes.ts";
import { ClusterSubscriber } from "./pubsub.ts";
import { Redirector, RETRYABLE } from "./redirect.ts";
import { type ClusterOptions, resolveClusterOptions, type ResolvedClusterOptions } from "./options.ts";
import { routeSlot } from "./command_keys.ts";
import { checkSendOptions } from "../connection/mod.ts";
import { ConnectionError, isConnectionError, isRedisReplyError } from "../errors.ts";
import { keySlot } from "./slot.ts";
import type {
  Arg,
  ConnectionEvent,
  RedisLike,
  Reply,
  SendOptions,
  TrackingClient,
  TrackingListener,
} from "../types.ts";

export type { ClusterOptions } from "./options.ts";
export { CrossSlotError, isCrossSlotError, keySlot } from "./slot.ts";

const SUBSCRIBE = new Set(["subscribe", "psubscribe", "unsubscribe", "punsubscribe"]);

/** Counters of a {@linkcode ClusterClient}, for tests and dashboards. */
export interface ClusterStats {
  /**
   * Redirections followed, MOVED and ASK together (`moved + asked`): what a
   * resharding costs. Each command follows at most `maxRedirections`.
   */
  redirections: number;
  /** MOVED replies followed (the slot map was updated each time). */
  moved: number;
  /** ASK replies followed (ASKING + the command on the importing node). */
  asked: number;
  /**
   * Redirections to a node that had already sent the same command away (two
   * nodes disagreeing about a slot while gossip settles it): each was
   * followed after a `retryDelayMs` pause rather than at once.
   */
  bounced: number;
  /** Commands tried again after TRYAGAIN, CLUSTERDOWN, LOADING, MASTERDOWN or an unreachable node. */
  retried: number;
  /** Slot map reads that succeeded. */
  refreshes: number;
  /** Slot map reads that failed on every node. */
  refreshFailures: number;
}

/**
 * Connect to a Redis Cluster: read the slot map from the first seed that
 * answers and open one connection per primary. Rejects with
 * `ConnectionError` when no seed answers.
 *
 * @param seeds node URLs (`redis://host:port`, `host:port`), or options with `seeds`.
 * @returns the client, once the slot map is read and every primary's first connection attempt has ended.
 * @throws {RangeError | TypeError} (synchronously) naming a bad setting or an unknown option (with the close one it resembles).
 * @throws {ConnectionError} (as a rejection) when no seed gives a slot map.
 * @example Point herdless at a cluster
 * ```ts
 * import { connectCluster } from "@herdless/herdless";
 * const seeds = (process.env.REDIS_CLUSTER_SEEDS ?? "redis://127.0.0.1:7000").split(",");
 * const cluster = await connectCluster(seeds);
 * await cluster.send(["SET", "{user:1}:name", "Ada"]);
 * console.log(await cluster.send(["GET", "{user:1}:name"])); // "Ada"
 * await cluster.close();
 * ```
 */
export function connectCluster(seeds: readonly string[] | ClusterOptions): Promise<ClusterClient> {
  const client = new ClusterClient(resolveClusterOptions(seeds));
  return client.ready.then(() => client);
}

/**
 * A client for a Redis Cluster; implements {@linkcode RedisLike}, so every
 * strategy runs on it unchanged. Create it with {@linkcode connectCluster}.
 *
 * - A command goes to the primary owning its keys' slot; keyless commands
 *   (PING, PUBLISH...) to any primary. Keys in different slots are refused
 *   with {@linkcode CrossSlotError} before anything is sent; MULTI/EXEC with
 *   a `TypeError` (a transaction needs a connection of its own: use a script).
 * - MOVED updates the map (and schedules a full re-read) and retries on the
 *   node it names; ASK sends ASKING and the command to the importing node in
 *   one write. A slot learned from MOVED keeps its new owner against any map
 *   read that started before the MOVED (a node with an older view cannot
 *   undo it), and a redirection back to a node that already refused the
 *   command waits `retryDelayMs` first.
 *   TRYAGAIN, CLUSTERDOWN, LOADING and an unreachable owner are retried every
 *   `retryDelayMs` while the map is re-read, for at most `offlineTimeoutMs`
 *   and the command's own timeout.
 * - A command already written when its connection drops is rejected with
 *   `ConnectionError` and never sent again, as with {@linkcode RedisClient}.
 * - Pub/sub: PUBLISH reaches every subscriber in the cluster from any node.
 *   SUBSCRIBE and PSUBSCRIBE go to one dedicated connection, whose messages
 *   reach {@linkcode ClusterClient.onPush} listeners; it moves to another
 *   node (subscriptions restored) when its node leaves the cluster. Sharded
 *   pub/sub (SSUBSCRIBE) is not offered.
 * - Not offered either: reads from replicas (every command goes to a
 *   primary), address translation (nodes must be reachable at the addresses
 *   they announce), and MULTI/EXEC.
 *
 * @example A cache on a cluster
 * ```ts
 * import { connectCluster, lease, pipeline } from "@herdless/herdless";
 * const seeds = (process.env.REDIS_CLUSTER_SEEDS ?? "redis://127.0.0.1:7000").split(",");
 * const redis = await connectCluster({ seeds, resp: 3 });
 * const cache = pipeline({ redis, ttlMs: 60_000 }, lease());
 * console.log(await cache.get("answer", () => 42)); // 42
 * console.log(redis.stats().moved); // 0 (the slot map was read up front)
 * console.log(redis.nodeFor(cache.keys("answer").data)); // the primary serving that key, e.g. 127.0.0.1:7002
 * await cache.close();
 * await redis.close();
 * ```
 */
export class ClusterClient implements RedisLike, TrackingClient {
  readonly #o: ResolvedClusterOptions;
  readonly #nodes: ClusterNodes;
  readonly #redirector: Redirector;
  readonly #subscriber: ClusterSubscriber;
  readonly #tracking = new ClusterTracking();
  #stats: ClusterStats = {
    redirections: 0,
    moved: 0,
    asked: 0,
    bounced: 0,
    retried: 0,
    refreshes: 0,
    refreshFailures: 0,
  };
  #inflight = 0;
  #drained: (() => void) | undefined;
  #closing = false;
  #closed = false;
  #closedPromise: Promise<void> | undefined;
  /** Settles when the first slot map has been read and every primary's first connection attempt has ended. */
  readonly ready: Promise<void>;

  /**
   * Start reading the slot map. Prefer {@linkcode connectCluster}, which validates options and waits for it.
   *
   * @param options options already resolved and checked.
   */
  constructor(options: ResolvedClusterOptions) {
    this.#o = options;
    this.#nodes = new ClusterNodes(options, this.#stats, () => {
      // A subscriber that lost its node moves, so pushes keep flowing (a waiter polls meanwhile).
      this.#subscriber.check();
      this.#redirector.wake();
    });
    this.#nodes.hooks = {
      opened: (client) => void this.#tracking.attach(client),
      retired: (client) => this.#tracking.detach(client),
      moved: (reason) => this.#tracking.reset(reason),
    };
    this.#redirector = new Redirector(options, this.#nodes, this.#stats);
    this.#subscriber = new ClusterSubscriber(options.node, this.#nodes.pickSubscriberNode, options.retryDelayMs);
    this.ready = this.#start();
  }

  async #start(): Promise<void> {
    try {
      await this.#nodes.refresh();
    } catch (error) {
      this.destroy();
      const seeds = this.#o.seeds.map((s) => s.id).join(", ");
      throw new ConnectionError(`Cannot read the cluster slot map from any seed (${seeds})`, { cause: error });
    }
    await Promise.allSettled(this.#nodes.firstAttempts);
  }

  /**
   * Rises whenever any node connection (re)connects: a server's script cache
   * may then be empty, so `Script` sends the body again. (A `NOSCRIPT` from a
   * node that never saw the script is handled by `Script`'s fallback.)
   */
  get generation(): number {
    return this.#nodes.generation;
  }

  /** The protocol every node connection speaks. */
  get resp(): 2 | 3 {
    return this.#o.node.resp;
  }

  /** True while every node connection in use tracks its reads (`track()` called). */
  get tracking(): boolean {
    return this.#tracking.wanted && this.#tracking.tracking(this.#nodes.clients);
  }

  /**
   * Turn on client tracking on every node connection, now and for the nodes
   * opened later, and report invalidations to `listener`; `reset` is called
   * when a node connection is lost or refused, and on any topology change
   * (a MOVED, a new slot map, a node leaving it), since a moved slot's keys
   * are tracked by a connection that no longer serves them.
   *
   * @param listener what hears invalidations and resets.
   * @throws {TypeError} (as a rejection) when the cluster was connected with `resp: 2`.
   * @example
   * ```ts
   * import { connectCluster } from "@herdless/herdless";
   * const seeds = (process.env.REDIS_CLUSTER_SEEDS ?? "redis://127.0.0.1:7000").split(",");
   * const cluster = await connectCluster({ seeds, resp: 3 });
   * const stop = await cluster.track({ invalidate: (keys) => console.log(keys), reset: (why) => console.log(why) });
   * stop();
   * await cluster.close();
   * ```
   */
  track(listener: TrackingListener): Promise<() => Promise<void>> {
    if (this.#o.node.resp !== 3) {
      return Promise.reject(
        new TypeError("Cannot track: client tracking needs RESP3 connections (connectCluster({ resp: 3 }))"),
      );
    }
    return this.#tracking.add(listener, this.#nodes.clients);
  }

  /**
   * Re-read the slot map now, from a connected node (or join the read in
   * flight). Not needed for correctness (MOVED and ASK are followed); useful
   * after a resharding you made, to skip one redirection per moved slot.
   *
   * @returns once the new map is applied.
   * @throws {ConnectionError} (as a rejection) when no node gives a map.
   * @example Re-read the map after a resharding
   * ```ts
   * import { connectCluster } from "@herdless/herdless";
   * const seeds = (process.env.REDIS_CLUSTER_SEEDS ?? "redis://127.0.0.1:7000").split(",");
   * const cluster = await connectCluster(seeds);
   * await cluster.refresh();
   * console.log(cluster.stats().refreshes); // 2
   * await cluster.close();
   * ```
   */
  refresh(): Promise<void> {
    if (this.#closing || this.#closed) return Promise.reject(new ConnectionError("The cluster client is closed"));
    return this.#nodes.refresh();
  }

  /** Commands issued and not yet settled, including those being redirected or waiting for a node. */
  get pending(): number {
    return this.#inflight;
  }

  /**
   * A copy of the counters (redirections followed, retries, slot map reads).
   *
   * @returns a snapshot; later redirections do not change it.
   */
  stats(): ClusterStats {
    return { ...this.#stats };
  }

  /**
   * Which primary the slot map names for a key's slot.
   *
   * @param key a key, as a command would carry it.
   * @returns its `host:port`, or `undefined` when no one serves the slot.
   */
  nodeFor(key: Arg): string | undefined {
    return this.#nodes.owner(keySlot(key));
  }

  /**
   * Send one command to the node that serves it and resolve with its reply.
   *
   * @param command the command and its arguments, e.g. `["GET", "{user:1}:name"]`.
   * @param options a timeout (counted from this call, across redirections), an abort signal, bytes instead of strings.
   * @returns the decoded reply.
   * @throws {CrossSlotError} (as a rejection) when its keys hash to different slots.
   * @throws {TypeError} (as a rejection) when `options` holds an unknown key or a field of the wrong type.
   * @throws {TimeoutError} when `timeoutMs` (counted from this call, across retries) runs out.
   * @throws {ConnectionError} when the connection dropped after the command was written, or no node could serve it within `offlineTimeoutMs`.
   * @example A counter with a deadline
   * ```ts
   * import { connectCluster } from "@herdless/herdless";
   * const seeds = (process.env.REDIS_CLUSTER_SEEDS ?? "redis://127.0.0.1:7000").split(",");
   * const cluster = await connectCluster(seeds);
   * console.log(await cluster.send(["INCR", "visits"], { timeoutMs: 500 }));
   * await cluster.close();
   * ```
   */
  send(command: readonly Arg[], options?: SendOptions): Promise<Reply> {
    if (this.#closing || this.#closed) return Promise.reject(new ConnectionError("The cluster client is closed"));
    if (!Array.isArray(command) || command.length === 0) {
      return Promise.reject(new TypeError("Cannot send: 'command' must be a non-empty array"));
    }
    if (options !== undefined) {
      const bad = checkSendOptions(options);
      if (bad !== undefined) return Promise.reject(bad);
    }
    let slot: number;
    try {
      slot = routeSlot(command);
    } catch (error) {
      return Promise.reject(error);
    }
    const name = typeof command[0] === "string" ? command[0].toLowerCase() : "";
    if (SUBSCRIBE.has(name)) return this.#subscriber.send(command, options);
    const timeoutMs = options?.timeoutMs ?? this.#o.commandTimeoutMs;
    const setting = options?.timeoutMs === undefined ? "commandTimeoutMs" : options.timeoutSetting ?? "timeoutMs";
    const startedAt = timeoutMs > 0 ? Date.now() : 0;
    const deadline = timeoutMs > 0 ? startedAt + timeoutMs : Infinity;
    // Fast path: the owner is known and connected; the node client counts the timeout from now too.
    const id = this.#nodes.owner(slot);
    const node = id === undefined ? undefined : this.#nodes.node(id);
    this.#inflight++;
    if (node !== undefined && node.client.connected) {
      return node.client.send(command, options).then(this.#settled, (error: unknown) => {
        if (
          !isRedisReplyError(error) || !(error.code === "MOVED" || error.code === "ASK" || RETRYABLE.has(error.code))
        ) {
          if (isConnectionError(error)) this.#nodes.requestRefresh();
          return this.#failed(error);
        }
        return this.#redirector.run({
          command,
          slot,
          options,
          startedAt,
          deadline,
          setting,
          timeoutMs,
          error,
          failedOn: node,
        })
          .then(this.#settled, this.#failed);
      });
    }
    return this.#redirector.run({ command, slot, options, startedAt, deadline, setting, timeoutMs }).then(
      this.#settled,
      this.#failed,
    );
  }

  // Every command is counted until it settles, so close() can wait for the
  // ones that are being redirected or are waiting for a node.
  readonly #settled = (reply: Reply): Reply => {
    if (--this.#inflight === 0) this.#drained?.();
    return reply;
  };

  readonly #failed = (error: unknown): never => {
    if (--this.#inflight === 0) this.#drained?.();
    throw error;
  };

  /**
   * Listen to pub/sub messages (and other push frames) of the subscriber
   * connection.
   *
   * @param listener called with each push frame, in order.
   * @returns the function that stops listening.
   * @example Subscribe through the cluster
   * ```ts
   * import { connectCluster } from "@herdless/herdless";
   * const seeds = (process.env.REDIS_CLUSTER_SEEDS ?? "redis://127.0.0.1:7000").split(",");
   * const cluster = await connectCluster(seeds);
   * const received = new Promise((resolve) => cluster.onPush((push) => push[0] === "message" && resolve(push)));
   * await cluster.send(["SUBSCRIBE", "news"]);
   * await cluster.send(["PUBLISH", "news", "hello"]);
   * console.log(await received); // ["message", "news", "hello"]
   * await cluster.close();
   * ```
   */
  onPush(listener: PushListener): () => void {
    return this.#subscriber.onPush(listener);
  }

  /**
   * Hear the state of the pub/sub connection (the one SUBSCRIBE goes to):
   * `disconnect` when it is lost or moves to another node (messages
   * published meanwhile are missed), `ready` once its subscriptions are in
   * place again. The node connections' events go to `connectCluster({ onEvent })`.
   *
   * @param listener called with each event; a throw is ignored.
   * @returns the function that stops listening.
   * @example Know when messages may have been missed
   * ```ts
   * import { connectCluster } from "@herdless/herdless";
   * const seeds = (process.env.REDIS_CLUSTER_SEEDS ?? "redis://127.0.0.1:7000").split(",");
   * const cluster = await connectCluster(seeds);
   * const stop = cluster.onSubscriberEvent((event) => event.type === "disconnect" && console.warn("messages may be lost"));
   * stop();
   * await cluster.close();
   * ```
   */
  onSubscriberEvent(listener: (event: ConnectionEvent) => void): () => void {
    return this.#subscriber.onEvent(listener);
  }

  /**
   * Open a sibling: a new cluster client with this one's own options (seeds,
   * credentials, TLS, protocol, timeouts), its own node connections and none
   * of this client's listeners.
   *
   * @returns the sibling, its slot map read.
   * @throws {ConnectionError} (as a rejection) when this client is closed, or no node gives the sibling a map.
   * @example A sibling for pub/sub
   * ```ts
   * import { connectCluster } from "@herdless/herdless";
   * const seeds = (process.env.REDIS_CLUSTER_SEEDS ?? "redis://127.0.0.1:7000").split(",");
   * const cluster = await connectCluster(seeds);
   * const sibling = await cluster.duplicate();
   * await sibling.send(["SUBSCRIBE", "news"]);
   * await Promise.all([sibling.close(), cluster.close()]);
   * ```
   */
  async duplicate(): Promise<ClusterClient> {
    if (this.#closing || this.#closed) throw new ConnectionError("Cannot duplicate: the cluster client is closed");
    const sibling = new ClusterClient({ ...this.#o, node: { ...this.#o.node, onEvent: undefined } });
    await sibling.ready;
    return sibling;
  }

  /**
   * Wait for every command already issued to settle (redirected and waiting
   * ones included), then close every connection.
   *
   * @returns a promise that settles once every connection is closed; the same one on every call.
   */
  close(): Promise<void> {
    if (this.#closedPromise) return this.#closedPromise;
    this.#closing = true;
    this.#closedPromise = (async () => {
      if (this.#inflight > 0) await new Promise<void>((resolve) => (this.#drained = resolve));
      this.#closed = true;
      await Promise.all([this.#nodes.close(), this.#subscriber.close()]);
    })();
    return this.#closedPromise;
  }

  /** Close at once: every pending command rejects with `ConnectionError`. */
  destroy(): void {
    this.#closing = true;
    this.#closed = true;
    this.#nodes.destroy();
    this.#subscriber.destroy();
    this.#redirector.wake();
  }
}
