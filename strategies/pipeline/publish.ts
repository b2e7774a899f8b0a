/**
 * The innermost fill step: call the origin, let the write strategies shape
 * what is stored, encode it into an envelope and publish it. A request that
 * carries a guard (the lease's) publishes through the guarded script; a
 * rejection (the lease expired or was invalidated) returns the value stored
 * now, or the loaded one if nothing is.
 *
 * @module
 */
import type { RedisLike } from "../../resp/types.ts";
import type { ResolvedCodec } from "../codec.ts";
import type { CacheEvent, Entry, FillRequest, Keys, Loader, Outcome, Strategy, WritePlan } from "../types.ts";
import { encodeEnvelope } from "./envelope.ts";
import { publishGuarded } from "./scripts.ts";

/** What the publisher needs of its cache. */
export interface PublisherContext {
  readonly redis: RedisLike;
  readonly codec: ResolvedCodec;
  readonly negativeTtlMs: number;
  /** The strategies with a `write` hook, in pipeline order. */
  readonly writers: readonly Strategy[];
  readonly channel: string;
  readonly commandTimeoutMs: number;
  readonly now: () => number;
  emit(event: CacheEvent): void;
  /** Re-read the entry after a rejected publication. */
  reread(keys: Keys): Promise<Entry | undefined>;
}

/** Loads and publishes the values of one cache. */
export class Publisher {
  readonly #c: PublisherContext;

  constructor(context: PublisherContext) {
    this.#c = context;
  }

  /** Call the origin for `req`, then publish what it returned. */
  async load(req: FillRequest, loader: Loader<unknown>): Promise<Outcome> {
    const c = this.#c;
    const key = req.keys.data;
    c.emit({ type: "load-start", key, background: req.background });
    const started = c.now();
    let value: unknown;
    let stored: { envelope: string | Uint8Array; px: number } | undefined;
    try {
      value = await loader({ signal: req.signal, identity: req.identity });
      const loadMs = Math.max(0, Math.ceil(c.now() - started));
      stored = this.#shape(key, value, req.ttlMs, loadMs);
    } catch (error) {
      c.emit({ type: "load-end", key, durationMs: Math.max(0, c.now() - started), error });
      throw error;
    }
    c.emit({ type: "load-end", key, durationMs: Math.max(0, c.now() - started) });
    if (stored === undefined) return { from: "origin", value, published: false };
    const options = { timeoutMs: c.commandTimeoutMs };
    if (req.guard === undefined) {
      await c.redis.send(["SET", key, stored.envelope, "PX", stored.px], options);
      return { from: "origin", value, published: true };
    }
    const publication = { key, guard: req.guard, envelope: stored.envelope, px: stored.px, channel: c.channel };
    if (await publishGuarded(c.redis, publication, options)) return { from: "origin", value, published: true };
    c.emit({ type: "late-publish", key });
    const entry = await c.reread(req.keys);
    return entry === undefined
      ? { from: "origin", value, published: false }
      : { from: "cache", value: entry.value, published: false };
  }

  // The write phase: windows from the write strategies, then the envelope.
  // Undefined when nothing is to be stored (a not-found with negativeTtlMs 0).
  #shape(key: string, value: unknown, ttlMs: number, loadMs: number) {
    const c = this.#c;
    const negative = value === undefined;
    if (negative && c.negativeTtlMs === 0) return undefined;
    const plan: WritePlan = { negative, freshMs: negative ? c.negativeTtlMs : ttlMs, staleMs: 0, ifErrorMs: 0, loadMs };
    if (!negative) { for (const s of c.writers) s.write!(plan); }
    const px = plan.freshMs + plan.staleMs + plan.ifErrorMs;
    if (!Number.isInteger(px) || px <= 0 || plan.freshMs <= 0) {
      throw new RangeError(
        `Cannot publish ${key}: the write phase produced a TTL of ${px} ms (fresh ${plan.freshMs} ms)`,
      );
    }
    let payload: string | Uint8Array;
    try {
      payload = negative ? "" : c.codec.encode(value);
      return { envelope: encodeEnvelope(plan, payload), px };
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new TypeError(`Cannot cache ${key}: the ${c.codec.name} codec cannot encode the loaded value (${reason})`, {
        cause: error,
      });
    }
  }
}
