/**
 * Invalidations without client tracking: where `CLIENT TRACKING` is refused
 * (an ACL without `client|tracking`, Redis Cloud; `CLIENT` renamed away,
 * Memorystore; older ElastiCache) or the client speaks RESP2, every herdless
 * writer publishes the keys it changed on the cache's channel (the publish
 * and release scripts, `invalidate()`, `invalidateTags()`, `clear()`), and
 * this feed hears them on a sibling connection opened from the client's own
 * options (`duplicate()`): the command connection never enters pub/sub mode.
 *
 * A message is published after its write, so a read that began before the
 * write is overtaken by it (its marker dies) or its kept entry is dropped
 * when it arrives, the same guarantee tracking gives. While the sibling is
 * down nothing may be kept, and its loss drops everything (messages are not
 * queued for an absent subscriber). Writes by other programs publish
 * nothing: an entry they change is seen at its own deadline.
 *
 * @module
 */
import { timeoutOptions } from "../../../resp/shared/mod.ts";
import type { RedisLike, Reply, SendOptions, TrackingListener } from "../../../resp/types.ts";

/** A source of invalidations: client tracking, or messages on a channel. */
export interface InvalidationSource {
  /** Start reporting to `listener`; resolves the function that stops. Rejects when refused. */
  start(listener: TrackingListener): Promise<() => Promise<void>>;
  /** True while reads that start now are covered. */
  readonly on: boolean;
}

/** The sibling connection the feed listens on. */
interface Sibling extends RedisLike {
  onPush(listener: (push: Reply[]) => void): () => void;
  onEvent?(listener: (event: { readonly type: string }) => void): () => void;
  /** A cluster client's pub/sub connection state (its `onEvent` is the nodes'). */
  onSubscriberEvent?(listener: (event: { readonly type: string }) => void): () => void;
  readonly connected?: boolean;
  close(): Promise<void>;
  destroy(): void;
}

/** A client that can open a sibling connection with its own options (ours do). */
export interface Duplicable extends RedisLike {
  duplicate(): Promise<Sibling>;
}

/** True when `redis` can open a sibling connection. */
export function isDuplicable(redis: RedisLike): redis is Duplicable {
  return typeof (redis as Partial<Duplicable>).duplicate === "function";
}

const decoder = new TextDecoder();

function text(value: Reply | undefined): string | undefined {
  if (typeof value === "string") return value;
  if (value instanceof Uint8Array) return decoder.decode(value);
  return undefined;
}

/** Invalidation messages on `channel`, heard on a sibling of `redis`. */
export class InvalidationMessages implements InvalidationSource {
  readonly #redis: Duplicable;
  readonly #channel: string;
  readonly #options: SendOptions;
  #sibling: Sibling | undefined;
  #subscribed = false;

  constructor(redis: Duplicable, channel: string, timeoutMs: number) {
    this.#redis = redis;
    this.#channel = channel;
    this.#options = timeoutOptions(timeoutMs, "commandTimeoutMs");
  }

  get on(): boolean {
    return this.#subscribed && (this.#sibling?.connected ?? true);
  }

  async start(listener: TrackingListener): Promise<() => Promise<void>> {
    const sibling = await this.#redis.duplicate();
    const channel = this.#channel;
    const stopPush = sibling.onPush((push) => {
      if (text(push[0]) !== "message" || text(push[1]) !== channel) return;
      const key = text(push[2]);
      if (key !== undefined) listener.invalidate([key]);
    });
    // The client subscribes again in the handshake of each new connection,
    // before `ready`; messages published while it was down are gone.
    const listen = sibling.onSubscriberEvent?.bind(sibling) ?? sibling.onEvent?.bind(sibling);
    const stopEvents = listen?.((event) => {
      if (event.type === "disconnect") {
        this.#subscribed = false;
        listener.reset(`the invalidation channel ${channel} was lost`);
      } else if (event.type === "ready" && this.#sibling === sibling) this.#subscribed = true;
    });
    try {
      await sibling.send(["SUBSCRIBE", channel], this.#options);
    } catch (error) {
      stopPush();
      stopEvents?.();
      sibling.destroy();
      throw error;
    }
    this.#sibling = sibling;
    this.#subscribed = true;
    return () => {
      stopPush();
      stopEvents?.();
      if (this.#sibling === sibling) {
        this.#sibling = undefined;
        this.#subscribed = false;
      }
      return sibling.close().catch(() => sibling.destroy());
    };
  }
}
