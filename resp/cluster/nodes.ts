/**
 * The cluster client's view of the cluster: the slot map, one pipelined
 * `RedisClient` per node it has used, and the re-reads of the map (at most
 * one in flight, at least `retryDelayMs` apart, however many commands ask).
 * Internal to `client.ts`; not re-exported.
 *
 * @module
 */
import { ignore } from "../shared/mod.ts";
import { RedisClient } from "../client.ts";
import { LearnedSlots } from "./learned.ts";
import { type MapSource, readSlotMap } from "./read_slot_map.ts";
import type { ResolvedClusterOptions } from "./options.ts";
import { emptyTopology, type NodeAddress, type Topology } from "./slot_map.ts";

/** A node's connection; `failed` once its first connection attempt failed. */
export interface Node {
  readonly address: NodeAddress;
  readonly client: RedisClient;
  failed: boolean;
}

/** The counters of map reads, part of the client's `ClusterStats`. */
export interface RefreshStats {
  refreshes: number;
  refreshFailures: number;
}

/** The slot map and the connections to the nodes it names. */
export class ClusterNodes {
  readonly #o: ResolvedClusterOptions;
  readonly #stats: RefreshStats;
  readonly #onChange: () => void;
  /** Told about each node connection opened and retired, and about slots that moved. */
  hooks: {
    opened(client: RedisClient): void;
    retired(client: RedisClient): void;
    moved(reason: string): void;
  } | undefined = undefined;
  #topology: Topology = emptyTopology();
  readonly #learned = new LearnedSlots();
  #nodes = new Map<string, Node>();
  #retiredGenerations = 0;
  #refreshing: Promise<void> | undefined;
  #refreshAgain = false;
  #refreshFirst: string | undefined;
  #refreshTimer: ReturnType<typeof setTimeout> | undefined;
  #lastRefreshAt = 0;
  #closed = false;
  /** Why the last read of the map failed; undefined after a success. */
  lastRefreshError: unknown;

  /**
   * @param o the cluster's resolved options.
   * @param stats the counters this updates (`refreshes`, `refreshFailures`).
   * @param onChange called after each new map is applied: waiting commands try again.
   */
  constructor(o: ResolvedClusterOptions, stats: RefreshStats, onChange: () => void) {
    this.#o = o;
    this.#stats = stats;
    this.#onChange = onChange;
  }

  /** True once `close()` or `destroy()` began: nothing new is opened. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Sum of every node connection's generation, retired ones included: it rises whenever one (re)connects. */
  get generation(): number {
    let sum = this.#retiredGenerations;
    for (const node of this.#nodes.values()) sum += node.client.generation;
    return sum;
  }

  /** The node connections in use. */
  get clients(): RedisClient[] {
    return [...this.#nodes.values()].map((n) => n.client);
  }

  /** Each known node's first connection attempt, for `ready`. */
  get firstAttempts(): Promise<void>[] {
    return [...this.#nodes.values()].map((n) => n.client.ready);
  }

  /** The address id of the primary the map names for `slot` (or any primary for -1, a keyless command). */
  owner(slot: number): string | undefined {
    return slot >= 0 ? this.#topology.owners[slot] : this.#anyPrimary();
  }

  /**
   * The connection to node `id`, created on first use; one whose first
   * connection attempt failed is replaced (RedisClient gives up after a
   * failed first attempt).
   *
   * @param hint where the node listens when the map does not know it yet (an ASK target).
   */
  node(id: string, hint?: NodeAddress): Node | undefined {
    const existing = this.#nodes.get(id);
    if (existing !== undefined && !existing.failed) return existing;
    if (this.#closed) return undefined;
    const address = hint ?? this.#topology.nodes.get(id) ?? this.#o.seeds.find((s) => s.id === id);
    if (address === undefined) return undefined;
    if (existing !== undefined) this.#retire(existing);
    const node = this.#open(address);
    this.#nodes.set(id, node);
    return node;
  }

  /**
   * Record that `slot` moved to `target` (a MOVED reply), ahead of the next
   * full read; a read that started before this cannot undo it (see `LearnedSlots`).
   */
  learn(slot: number, target: NodeAddress): void {
    if (!Number.isInteger(slot) || slot < 0 || slot >= this.#topology.owners.length) return;
    this.#learned.learn(slot, target);
    if (this.#topology.owners[slot] !== target.id) this.hooks?.moved(`slot ${slot} moved to ${target.id}`);
    this.#topology.owners[slot] = target.id;
    if (!this.#topology.nodes.has(target.id)) this.#topology.nodes.set(target.id, target);
    if (!this.#topology.primaries.includes(target.id)) this.#topology.primaries.push(target.id);
  }

  /**
   * Where the pub/sub connection should live: a connected primary other
   * than `avoid`; with `connected` false, any known node when none is connected.
   */
  readonly pickSubscriberNode = (avoid: string | undefined, connected: boolean): NodeAddress | undefined => {
    const { primaries, nodes } = this.#topology;
    const id = primaries.find((p) => p !== avoid && this.#nodes.get(p)?.client.connected) ??
      (connected ? undefined : primaries[0]);
    if (id === undefined) return connected ? undefined : this.#o.seeds[0];
    return nodes.get(id) ?? this.#nodes.get(id)?.address;
  };

  /**
   * Re-read the slot map soon: at most one read in flight, and reads at
   * least `retryDelayMs` apart, however many commands ask for one.
   *
   * @param first the node to ask first (the target of a MOVED has the newest view of that slot).
   */
  requestRefresh(first?: string): void {
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
      this.refresh().catch(ignore);
    }, Math.max(0, wait));
  }

  /**
   * Read the slot map now (or join the read in flight).
   *
   * @throws the last node's error (as a rejection) when no node gives a map.
   */
  refresh(): Promise<void> {
    if (this.#refreshing !== undefined) return this.#refreshing;
    this.#refreshing = this.#readMap().finally(() => {
      this.#refreshing = undefined;
      this.#lastRefreshAt = Date.now();
      if (this.#refreshAgain) {
        this.#refreshAgain = false;
        this.requestRefresh();
      }
    });
    return this.#refreshing;
  }

  /** Stop reading the map, wait for a read in flight, then close every connection (each after its last reply). */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#refreshTimer);
    await this.#refreshing?.catch(ignore);
    const nodes = [...this.#nodes.values()];
    this.#nodes.clear();
    await Promise.all(nodes.map((n) => n.client.close()));
  }

  /** Close every connection at once: their pending commands reject with `ConnectionError`. */
  destroy(): void {
    this.#closed = true;
    clearTimeout(this.#refreshTimer);
    for (const node of this.#nodes.values()) node.client.destroy();
    this.#nodes.clear();
  }

  #anyPrimary(): string | undefined {
    const primaries = this.#topology.primaries;
    for (const id of primaries) if (this.#nodes.get(id)?.client.connected) return id;
    return primaries[0] ?? this.#o.seeds[0]?.id;
  }

  #open(address: NodeAddress): Node {
    const client = new RedisClient({ ...this.#o.node, host: address.host, port: address.port, offlineQueue: 0 });
    const node: Node = { address, client, failed: false };
    // A failed first attempt is not a reason to re-read the map by itself:
    // a command that needs this node asks for that while it waits, and an
    // idle client must not probe a dead node forever.
    client.ready.then(() => {
      // A node refused HELLO 3 (resp not given): the others will too; open them in RESP2 from now on.
      if (client.resp === 2 && this.#o.node.respFallback) {
        this.#o.node.resp = 2;
        this.#o.node.respFallback = false;
      }
    }, () => (node.failed = true));
    this.hooks?.opened(client);
    return node;
  }

  #retire(node: Node): void {
    if (this.#nodes.get(node.address.id) === node) this.#nodes.delete(node.address.id);
    this.#retiredGenerations += node.client.generation;
    this.hooks?.retired(node.client);
    // Commands already written there finish (or fail) on their own; nothing new is sent.
    node.client.close().catch(ignore);
  }

  async #readMap(): Promise<void> {
    // Live connections first, in random order (the target of the last MOVED
    // first: it has the newest view of that slot), then every other known
    // node and seed over a short-lived connection.
    const startedAt = this.#learned.seq;
    const live = [...this.#nodes.values()].filter((n) => n.client.connected && !n.failed);
    shuffle(live);
    const sources: MapSource[] = [...live];
    for (const a of new Map([...this.#topology.nodes, ...this.#o.seeds.map((s) => [s.id, s] as const)]).values()) {
      if (!live.some((n) => n.address.id === a.id)) sources.push({ address: a });
    }
    // `mapSourceFirst` (tests: a node with an old view) outranks the MOVED target.
    for (const id of [this.#refreshFirst, this.#o.mapSourceFirst]) {
      const at = sources.findIndex((s) => s.address.id === id);
      if (at > 0) sources.unshift(...sources.splice(at, 1));
    }
    this.#refreshFirst = undefined;
    try {
      // Bounded well below connectTimeoutMs' default: a frozen node must not hold every refresh for 10 s.
      const read = await readSlotMap(
        sources,
        this.#o.node,
        Math.min(this.#o.node.connectTimeoutMs, 2000),
        () => this.#closed,
      );
      if (read === undefined) return;
      this.#apply(read.topology, startedAt, read.from.id);
      this.#stats.refreshes++;
      this.lastRefreshError = undefined;
    } catch (error) {
      this.#stats.refreshFailures++;
      this.lastRefreshError = error;
      throw error;
    }
  }

  #apply(topology: Topology, startedAt: number, from: string): void {
    if (this.#closed) return;
    this.#learned.reconcile(topology, startedAt, from, (id) => {
      const node = this.#nodes.get(id);
      return node !== undefined && !node.failed && node.client.connected;
    });
    const before = this.#topology.owners;
    if (before.some((owner, slot) => owner !== undefined && owner !== topology.owners[slot])) {
      this.hooks?.moved("the cluster's slot map changed");
    }
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
    for (const id of topology.primaries) this.node(id);
    this.#onChange();
  }
}

function shuffle<T>(a: T[]): void {
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
}
