/**
 * A Redis Cluster client: routes each command to the primary that owns its
 * keys' slot over one pipelined {@linkcode RedisClient} per node, follows
 * MOVED and ASK, and waits out failovers and migrations within bounds.
 *
 * @module
 */
import { type PushListener, RedisClient } from "./client.ts";
import { ClusterSubscriber } from "./_cluster_pubsub.ts";
import { type ClusterOptions, resolveClusterOptions, type ResolvedClusterOptions } from "./_cluster_options.ts";
import { routeSlot } from "./_command_keys.ts";
import { ConnectionError, isConnectionError, isRedisReplyError, RedisReplyError, TimeoutError } from "./errors.ts";
import { keySlot } from "./slot.ts";
import { type MapSource, readSlotMap } from "./_cluster_map.ts";
import { emptyTopology, type NodeAddress, parseEndpoint, type Topology } from "./_slot_map.ts";
import type { Arg, RedisLike, Reply, SendOptions } from "./types.ts";

export type { ClusterOptions } from "./_cluster_options.ts";
export { CrossSlotError, isCrossSlotError, keySlot } from "./slot.ts";

/** Replies that mean "not now, nothing ran": the command is tried again after `retryDelayMs`. */
const RETRYABLE = new Set(["TRYAGAIN", "CLUSTERDOWN", "LOADING", "MASTERDOWN"]);
const SUBSCRIBE = new Set(["subscribe", "psubscribe", "unsubscribe", "punsubscribe"]);
const noop = () => {};

/** Counters of a {@linkcode ClusterClient}, for tests and dashboards. */
export interface ClusterStats {
  /** MOVED replies followed (the slot map was updated each time). */
  moved: number;
  /** ASK replies followed (ASKING + the command on the importing node). */
  asked: number;
  /** Commands tried again after TRYAGAIN, CLUSTERDOWN, LOADING, MASTERDOWN or an unreachable node. */
  retried: number;
  /** Slot map reads that succeeded, and that failed on every node. */
  refreshes: number;
  refreshFailures: number;
}

interface Node {
  readonly address: NodeAddress;
  readonly client: RedisClient;
  failed: boolean;
}

/**
 * Connect to a Redis Cluster: read the slot map from the first seed that
 * answers and open one connection per primary. Rejects with
 * `ConnectionError` when no seed answers.
 *
 * @param seeds node URLs (`redis://host:port`, `host:port`), or options with `seeds`.
 * @throws {RangeError | TypeError} (synchronously) naming a bad setting.
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
 * - MOVED updates the map (and schedules a full re-read) and retries; ASK
 *   sends ASKING and the command to the importing node in one write.
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
export class ClusterClient implements RedisLike {
  readonly #o: ResolvedClusterOptions;
  #topology: Topology = emptyTopology();
  #nodes = new Map<string, Node>();
  #retiredGenerations = 0;
  #waiting = 0;
  #inflight = 0;
  #drained: (() => void) | undefined;
  #wakers = new Set<() => void>();
  #refreshing: Promise<void> | undefined;
  #refreshAgain = false;
  #refreshFirst: string | undefined;
  #refreshTimer: ReturnType<typeof setTimeout> | undefined;
  #lastRefreshAt = 0;
  #lastRefreshError: unknown;
  #closing = false;
  #closed = false;
  #closedPromise: Promise<void> | undefined;
  #subscriber: ClusterSubscriber;
  #stats: ClusterStats = { moved: 0, asked: 0, retried: 0, refreshes: 0, refreshFailures: 0 };
  /** Settles when the first slot map has been read and every primary's first connection attempt has ended. */
  readonly ready: Promise<void>;

  /** Prefer {@linkcode connectCluster}, which validates options and waits for the slot map. */
  constructor(options: ResolvedClusterOptions) {
    this.#o = options;
    this.#subscriber = new ClusterSubscriber(options.node, this.#pickSubscriberNode, options.retryDelayMs);
    this.ready = this.#start();
  }

  async #start(): Promise<void> {
    try {
      await this.#refresh();
    } catch (error) {
      this.destroy();
      const seeds = this.#o.seeds.map((s) => s.id).join(", ");
      throw new ConnectionError(`Cannot read the cluster slot map from any seed (${seeds})`, { cause: error });
    }
    await Promise.allSettled([...this.#nodes.values()].map((n) => n.client.ready));
  }

  /**
   * Rises whenever any node connection (re)connects: a server's script cache
   * may then be empty, so `Script` sends the body again. (A `NOSCRIPT` from a
   * node that never saw the script is handled by `Script`'s fallback.)
   */
  get generation(): number {
    let sum = this.#retiredGenerations;
    for (const node of this.#nodes.values()) sum += node.client.generation;
    return sum;
  }

  /** Commands issued and not yet settled, including those being redirected or waiting for a node. */
  get pending(): number {
    return this.#inflight;
  }

  /** A copy of the counters (redirections followed, retries, slot map reads). */
  stats(): ClusterStats {
    return { ...this.#stats };
  }

  /** `host:port` of the primary the slot map names for this key's slot, or `undefined` when no one serves it. */
  nodeFor(key: Arg): string | undefined {
    return this.#topology.owners[keySlot(key)];
  }

  /**
   * Send one command to the node that serves it and resolve with its reply.
   *
   * @param command the command and its arguments, e.g. `["GET", "{user:1}:name"]`.
   * @throws {CrossSlotError} (as a rejection) when its keys hash to different slots.
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
    let slot: number;
    try {
      slot = routeSlot(command);
    } catch (error) {
      return Promise.reject(error);
    }
    const name = typeof command[0] === "string" ? command[0].toLowerCase() : "";
    if (SUBSCRIBE.has(name)) return this.#subscriber.send(command, name, options);
    const timeoutMs = options?.timeoutMs ?? this.#o.commandTimeoutMs;
    const startedAt = timeoutMs > 0 ? Date.now() : 0;
    const deadline = timeoutMs > 0 ? startedAt + timeoutMs : Infinity;
    // Fast path: the owner is known and connected; the node client counts the timeout from now too.
    const id = slot >= 0 ? this.#topology.owners[slot] : this.#anyPrimary();
    const node = id === undefined ? undefined : this.#node(id);
    this.#inflight++;
    if (node !== undefined && node.client.connected) {
      return node.client.send(command, options).then(this.#settled, (error: unknown) => {
        if (
          !isRedisReplyError(error) || !(error.code === "MOVED" || error.code === "ASK" || RETRYABLE.has(error.code))
        ) {
          if (isConnectionError(error)) this.#requestRefresh();
          return this.#failed(error);
        }
        return this.#run(command, slot, options, startedAt, deadline, error, node).then(this.#settled, this.#failed);
      });
    }
    return this.#run(command, slot, options, startedAt, deadline, undefined, undefined).then(
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

  // The slow path: a loop of (wait for a usable node) -> send -> classify the error.
  async #run(
    command: readonly Arg[],
    slot: number,
    options: SendOptions | undefined,
    startedAt: number,
    deadline: number,
    error: unknown,
    failedOn: Node | undefined,
  ): Promise<Reply> {
    const wait = { since: 0, waiting: false };
    let redirections = 0;
    let ask: NodeAddress | undefined;
    try {
      for (;;) {
        if (error !== undefined) {
          const e = error;
          error = undefined;
          if (!isRedisReplyError(e)) {
            if (isConnectionError(e)) this.#requestRefresh();
            if (e instanceof TimeoutError && startedAt > 0) throw timeout(command, startedAt, e);
            throw e; // written (or refused by the server): never sent again
          }
          if (e.code === "MOVED" || e.code === "ASK") {
            if (++redirections > this.#o.maxRedirections) {
              throw new RedisReplyError(
                `${e.message} (gave up after ${this.#o.maxRedirections} redirections: maxRedirections)`,
                { cause: e },
              );
            }
            const [, slotText, endpoint] = e.message.split(" ");
            const target = parseEndpoint(endpoint ?? "", failedOn?.address.host ?? "127.0.0.1");
            if (target === undefined) throw e;
            if (e.code === "MOVED") {
              this.#stats.moved++;
              this.#learn(Number(slotText), target);
              // The node a MOVED points to has the newest view of that slot: ask it first.
              this.#requestRefresh(target.id);
            } else {
              this.#stats.asked++;
              ask = target;
            }
          } else if (RETRYABLE.has(e.code)) {
            this.#stats.retried++;
            if (e.code !== "TRYAGAIN") this.#requestRefresh();
            await this.#pause(wait, command, slot, startedAt, deadline, options, e);
          } else {
            throw e;
          }
        }
        if (this.#closed) throw new ConnectionError("The cluster client is closed");
        if (options?.signal?.aborted) throw options.signal.reason;
        if (Date.now() >= deadline) throw timeout(command, startedAt, undefined);
        const id = ask?.id ?? (slot >= 0 ? this.#topology.owners[slot] : this.#anyPrimary());
        const node = id === undefined ? undefined : this.#node(id, ask);
        if (node === undefined || !node.client.connected) {
          this.#stats.retried++;
          this.#requestRefresh();
          await this.#pause(wait, command, slot, startedAt, deadline, options, this.#lastRefreshError);
          continue;
        }
        const sendOptions: SendOptions = {
          signal: options?.signal,
          buffers: options?.buffers,
          onAttribute: options?.onAttribute,
          timeoutMs: deadline === Infinity ? 0 : Math.max(1, deadline - Date.now()),
        };
        // ASKING and the command leave in the same write (automatic pipelining):
        // ASKING only covers the very next command on that connection.
        if (ask !== undefined) node.client.send(["ASKING"]).catch(noop);
        ask = undefined;
        try {
          return await node.client.send(command, sendOptions);
        } catch (e) {
          error = e;
          failedOn = node;
        }
      }
    } finally {
      if (wait.waiting) this.#waiting--;
    }
  }

  // Wait `retryDelayMs` (less if the deadline is nearer) for the cluster to heal, within the offline budget.
  async #pause(
    wait: { since: number; waiting: boolean },
    command: readonly Arg[],
    slot: number,
    startedAt: number,
    deadline: number,
    options: SendOptions | undefined,
    cause: unknown,
  ): Promise<void> {
    const now = Date.now();
    if (!wait.waiting) {
      if (this.#waiting >= this.#o.offlineQueue) {
        throw new ConnectionError(
          this.#o.offlineQueue === 0
            ? `No node can serve ${describe(command, slot)} now (offlineQueue is off)`
            : `The cluster's offline queue is full (${this.#o.offlineQueue} commands)`,
          { cause },
        );
      }
      this.#waiting++;
      wait.waiting = true;
      wait.since = now;
    }
    const budget = this.#o.offlineTimeoutMs === 0 ? Infinity : wait.since + this.#o.offlineTimeoutMs;
    if (now >= budget) {
      throw new ConnectionError(
        `No node could serve ${describe(command, slot)} for ${now - wait.since} ms (offlineTimeoutMs)`,
        { cause },
      );
    }
    if (now >= deadline) throw timeout(command, startedAt, undefined);
    const ms = Math.min(this.#o.retryDelayMs, deadline - now, budget - now);
    await new Promise<void>((resolve) => {
      const signal = options?.signal;
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        this.#wakers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener("abort", done, { once: true });
      this.#wakers.add(done);
    });
  }

  #anyPrimary(): string | undefined {
    const primaries = this.#topology.primaries;
    for (const id of primaries) if (this.#nodes.get(id)?.client.connected) return id;
    return primaries[0] ?? this.#o.seeds[0]?.id;
  }

  // The connection to a node, created on first use; one whose first connection
  // attempt failed is replaced (RedisClient gives up after a failed first attempt).
  #node(id: string, hint?: NodeAddress): Node | undefined {
    const existing = this.#nodes.get(id);
    if (existing !== undefined && !existing.failed) return existing;
    if (this.#closed) return undefined;
    const address = hint ?? this.#topology.nodes.get(id) ?? this.#o.seeds.find((s) => s.id === id);
    if (address === undefined) return undefined;
    if (existing !== undefined) this.#retire(existing);
    const node = this.#open(address, this.#o.node.resp);
    this.#nodes.set(id, node);
    return node;
  }

  #open(address: NodeAddress, resp: 2 | 3): Node {
    const client = new RedisClient({ ...this.#o.node, host: address.host, port: address.port, resp, offlineQueue: 0 });
    const node: Node = { address, client, failed: false };
    // A failed first attempt is not a reason to re-read the map by itself:
    // a command that needs this node asks for that while it waits, and an
    // idle client must not probe a dead node forever.
    client.ready.catch(() => (node.failed = true));
    return node;
  }

  #retire(node: Node): void {
    if (this.#nodes.get(node.address.id) === node) this.#nodes.delete(node.address.id);
    this.#retiredGenerations += node.client.generation;
    // Commands already written there finish (or fail) on their own; nothing new is sent.
    node.client.close().catch(noop);
  }

  #learn(slot: number, target: NodeAddress): void {
    if (!Number.isInteger(slot) || slot < 0 || slot >= this.#topology.owners.length) return;
    this.#topology.owners[slot] = target.id;
    if (!this.#topology.nodes.has(target.id)) this.#topology.nodes.set(target.id, target);
    if (!this.#topology.primaries.includes(target.id)) this.#topology.primaries.push(target.id);
  }

  // Re-read the slot map soon: at most one read in flight, and reads at least
  // `retryDelayMs` apart, however many commands ask for one.
  #requestRefresh(first?: string): void {
    if (this.#closed) return;
    if (first !== undefined) this.#refreshFirst = first;
    if (this.#refreshing !== undefined) {
      this.#refreshAgain = true;
      return;
    }
    if (this.#refreshTimer !== undefined) return;
    const wait = this.#lastRefreshAt + this.#o.retryDelayMs - Date.now();
    this.#refreshTimer = setTimeout(() => {
      this.#refreshTimer = undefined;
      this.#refresh().catch(noop);
    }, Math.max(0, wait));
  }

  #refresh(): Promise<void> {
    if (this.#refreshing !== undefined) return this.#refreshing;
    this.#refreshing = this.#readMap().finally(() => {
      this.#refreshing = undefined;
      this.#lastRefreshAt = Date.now();
      if (this.#refreshAgain) {
        this.#refreshAgain = false;
        this.#requestRefresh();
      }
    });
    return this.#refreshing;
  }

  async #readMap(): Promise<void> {
    // Live connections first, in random order (the target of the last MOVED
    // first: it has the newest view of that slot), then every other known
    // node and seed over a short-lived connection.
    const live = [...this.#nodes.values()].filter((n) => n.client.connected && !n.failed);
    shuffle(live);
    const first = live.findIndex((n) => n.address.id === this.#refreshFirst);
    this.#refreshFirst = undefined;
    if (first > 0) live.unshift(...live.splice(first, 1));
    const sources: MapSource[] = [...live];
    for (const a of new Map([...this.#topology.nodes, ...this.#o.seeds.map((s) => [s.id, s] as const)]).values()) {
      if (!live.some((n) => n.address.id === a.id)) sources.push({ address: a });
    }
    try {
      // Bounded well below connectTimeoutMs' default: a frozen node must not hold every refresh for 10 s.
      const topology = await readSlotMap(
        sources,
        this.#o.node,
        Math.min(this.#o.node.connectTimeoutMs, 2000),
        () => this.#closed,
      );
      if (topology === undefined) return;
      this.#apply(topology);
      this.#stats.refreshes++;
      this.#lastRefreshError = undefined;
    } catch (error) {
      this.#stats.refreshFailures++;
      this.#lastRefreshError = error;
      throw error;
    }
  }

  #apply(topology: Topology): void {
    if (this.#closed) return;
    this.#topology = topology;
    // A connection to a node that is still in the cluster stays open even when
    // it owns no slot now (a demoted primary): a node with a stale view may
    // name it again, and reconnecting each time would churn.
    for (const node of [...this.#nodes.values()]) {
      const known = topology.nodes.has(node.address.id) || topology.primaries.includes(node.address.id);
      if (!known || node.failed || (!node.client.connected && !topology.primaries.includes(node.address.id))) {
        this.#retire(node);
      }
    }
    for (const id of topology.primaries) this.#node(id);
    // A subscriber that lost its node moves, so pushes keep flowing (a waiter polls meanwhile).
    this.#subscriber.check();
    for (const wake of [...this.#wakers]) wake();
  }

  // --- pub/sub ---

  /**
   * Listen to pub/sub messages (and other push frames) of the subscriber
   * connection. Returns the function that stops listening.
   *
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

  readonly #pickSubscriberNode = (avoid: string | undefined, connected: boolean): NodeAddress | undefined => {
    const { primaries, nodes } = this.#topology;
    const id = primaries.find((p) => p !== avoid && this.#nodes.get(p)?.client.connected) ??
      (connected ? undefined : primaries[0]);
    if (id === undefined) return connected ? undefined : this.#o.seeds[0];
    return nodes.get(id) ?? this.#nodes.get(id)?.address;
  };

  // --- lifecycle ---

  /** Wait for every command already issued to settle, then close every connection. */
  close(): Promise<void> {
    if (this.#closedPromise) return this.#closedPromise;
    this.#closing = true;
    this.#closedPromise = (async () => {
      if (this.#inflight > 0) await new Promise<void>((resolve) => (this.#drained = resolve));
      this.#closed = true;
      clearTimeout(this.#refreshTimer);
      await this.#refreshing?.catch(noop);
      const nodes = [...this.#nodes.values()];
      this.#nodes.clear();
      await Promise.all([...nodes.map((n) => n.client.close()), this.#subscriber.close()]);
    })();
    return this.#closedPromise;
  }

  /** Close at once: every pending command rejects with `ConnectionError`. */
  destroy(): void {
    this.#closing = true;
    this.#closed = true;
    clearTimeout(this.#refreshTimer);
    for (const node of this.#nodes.values()) node.client.destroy();
    this.#nodes.clear();
    this.#subscriber.destroy();
    for (const wake of [...this.#wakers]) wake();
  }
}

function timeout(command: readonly Arg[], startedAt: number, cause: unknown): TimeoutError {
  const waited = Date.now() - startedAt;
  const name = typeof command[0] === "string" ? command[0].toUpperCase() : "(binary)";
  return new TimeoutError(
    `Command ${name} timed out after ${waited} ms`,
    waited,
    cause === undefined ? undefined : { cause },
  );
}

function describe(command: readonly Arg[], slot: number): string {
  const name = typeof command[0] === "string" ? command[0].toUpperCase() : "(binary)";
  return slot >= 0 ? `${name} (slot ${slot})` : name;
}

function shuffle<T>(a: T[]): void {
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
}
