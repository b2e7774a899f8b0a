/**
 * The cluster client's pub/sub side: one dedicated subscriber connection to
 * one node. Classic pub/sub is broadcast over the cluster bus, so a
 * subscriber on any node hears a PUBLISH sent to any other. When that node is
 * lost the connection moves to a live primary and subscribes again.
 *
 * @module
 */
import { ignore } from "../shared/mod.ts";
import { type PushListener, RedisClient } from "../client.ts";
import { ConnectionError } from "../errors.ts";
import type { ResolvedOptions } from "../options.ts";
import { Subscriptions } from "../connection/mod.ts";
import type { NodeAddress } from "./slot_map.ts";
import type { Arg, ConnectionEvent, Reply, SendOptions } from "../types.ts";

/**
 * Picks where the subscriber should live: a connected primary other than
 * `avoid`; with `connected` false, any known node when none is connected.
 */
export type PickNode = (avoid: string | undefined, connected: boolean) => NodeAddress | undefined;

export class ClusterSubscriber {
  readonly #options: ResolvedOptions;
  readonly #pick: PickNode;
  readonly #checkMs: number;
  #client: RedisClient | undefined;
  #address: NodeAddress | undefined;
  #failed = false;
  /** What to restore on another node; the client on one node restores its own across reconnects. */
  #subscriptions = new Subscriptions();
  #listeners = new Set<PushListener>();
  #events = new Set<(event: ConnectionEvent) => void>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #closed = false;

  constructor(options: ResolvedOptions, pick: PickNode, checkMs: number) {
    this.#options = options;
    this.#pick = pick;
    this.#checkMs = checkMs;
  }

  onPush(listener: PushListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Hear the subscriber connection's state: `disconnect` when it is lost or
   * moves (messages may be missed from then on), `ready` once its
   * subscriptions are in place again.
   */
  onEvent(listener: (event: ConnectionEvent) => void): () => void {
    this.#events.add(listener);
    return () => this.#events.delete(listener);
  }

  #emit(event: ConnectionEvent): void {
    for (const listener of this.#events) {
      try {
        listener(event);
      } catch {
        // A listener must not break the subscriber.
      }
    }
  }

  /** Send a (P)(UN)SUBSCRIBE on the subscriber connection, remembering the channels for a move. */
  send(command: readonly Arg[], options: SendOptions | undefined): Promise<Reply> {
    this.#subscriptions.track(command);
    if (this.#client === undefined || this.#failed) this.#move(this.#pick(undefined, false));
    if (this.#client === undefined) {
      return Promise.reject(new ConnectionError("No cluster node is known to subscribe on"));
    }
    // The RedisClient itself restores subscriptions when it reconnects to the
    // same node; this watchdog only handles a node that does not come back.
    this.#timer ??= setInterval(() => this.check(), this.#checkMs);
    (this.#timer as { unref?: () => void }).unref?.();
    return this.#client.send(command, options);
  }

  /** Move to another node when the connection was lost (or never made) and a live primary exists. */
  check(): void {
    if (this.#closed || this.#client === undefined) return;
    const lost = this.#failed || (this.#client.generation > 0 && !this.#client.connected);
    if (!lost) return;
    const target = this.#pick(this.#address?.id, true);
    if (target !== undefined) this.#move(target);
  }

  #move(target: NodeAddress | undefined): void {
    if (this.#closed || target === undefined) return;
    const old = this.#client;
    // May queue offline: a SUBSCRIBE issued while it connects waits for it.
    const client = new RedisClient({ ...this.#options, host: target.host, port: target.port, offlineQueue: 10_000 });
    client.ready.catch(() => {
      if (this.#client === client) this.#failed = true;
    });
    client.onPush((push) => {
      for (const listener of this.#listeners) listener(push);
    });
    const moved = old !== undefined;
    // A moved subscriber is ready once its subscriptions are restored, not
    // when its handshake ends; later reconnects restore them in the handshake.
    client.onEvent((event) => {
      if (this.#client !== client || (moved && event.type === "ready" && event.generation === 1)) return;
      this.#emit(event);
    });
    const from = this.#address;
    this.#client = client;
    this.#address = target;
    this.#failed = false;
    if (old !== undefined) {
      old.destroy();
      const server = from === undefined ? "" : `${from.host}:${from.port}`;
      this.#emit({ type: "disconnect", server, cause: new ConnectionError("the subscriber moved to another node") });
      const restored = this.#subscriptions.restore().map((command) => client.send(command).catch(ignore));
      void Promise.all(restored).then(() => {
        if (this.#client === client && client.connected) {
          this.#emit({ type: "ready", server: `${target.host}:${target.port}`, generation: client.generation });
        }
      });
    }
  }

  close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    const client = this.#client;
    this.#client = undefined;
    return client?.close() ?? Promise.resolve();
  }

  destroy(): void {
    this.#closed = true;
    clearInterval(this.#timer);
    this.#client?.destroy();
    this.#client = undefined;
  }
}
