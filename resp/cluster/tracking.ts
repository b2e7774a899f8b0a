/**
 * Client tracking across a cluster: every node connection tracks the reads
 * it carries (each `RedisClient` keeps its tracking across its reconnects)
 * and their invalidations reach the cluster's listeners. Anything that may
 * make a node's view incomplete resets every listener: a node connection
 * lost or refused, a slot that moved (MOVED, a new slot map), a node that
 * left the map. Internal to `client.ts`; not re-exported.
 *
 * @module
 */
import type { RedisClient } from "../client.ts";
import type { TrackingListener } from "../types.ts";

/** The tracking of one cluster client. */
export class ClusterTracking {
  readonly #listeners = new Set<TrackingListener>();
  readonly #nodes = new Map<RedisClient, { stop: (() => void) | undefined }>();

  /** True while someone listens: new node connections must track. */
  get wanted(): boolean {
    return this.#listeners.size > 0;
  }

  /** True while every node connection in use tracks its reads. */
  tracking(clients: Iterable<RedisClient>): boolean {
    let any = false;
    for (const client of clients) {
      if (!client.tracking) return false;
      any = true;
    }
    return any;
  }

  /** Add a listener and turn tracking on for `clients`; resolves the function that stops listening. */
  async add(listener: TrackingListener, clients: Iterable<RedisClient>): Promise<() => Promise<void>> {
    this.#listeners.add(listener);
    await Promise.all([...clients].map((client) => this.attach(client)));
    return async () => {
      if (!this.#listeners.delete(listener) || this.#listeners.size > 0) return;
      const stops = [...this.#nodes.values()].map((entry) => entry.stop?.());
      this.#nodes.clear();
      await Promise.all(stops);
    };
  }

  /** Track the reads of a node connection (a new one, or all of them when the first listener came). */
  async attach(client: RedisClient): Promise<void> {
    if (!this.wanted || this.#nodes.has(client)) return;
    const entry: { stop: (() => Promise<void>) | undefined } = { stop: undefined };
    this.#nodes.set(client, entry);
    try {
      entry.stop = await client.track({
        invalidate: (keys) => {
          for (const listener of this.#listeners) listener.invalidate(keys);
        },
        reset: (reason) => this.reset(`a node connection: ${reason}`),
        refused: (error) => this.#refused(error),
      });
    } catch (error) {
      this.#nodes.delete(client);
      this.reset(`a node connection refused tracking (${error instanceof Error ? error.message : String(error)})`);
      this.#refused(error);
    }
  }

  #refused(error: unknown): void {
    for (const listener of [...this.#listeners]) listener.refused?.(error);
  }

  /** A node connection is no longer used. */
  detach(client: RedisClient): void {
    const entry = this.#nodes.get(client);
    if (entry === undefined) return;
    this.#nodes.delete(client);
    void entry.stop?.();
    this.reset("a node left the cluster's slot map");
  }

  /** Forget everything: the topology changed or a node's view may be incomplete. */
  reset(reason: string): void {
    for (const listener of this.#listeners) listener.reset(reason);
  }
}
