/**
 * The calls that change what is stored: `set`, `invalidate`, `expire`,
 * `invalidateTags` and `clear`. Each ends the same way, in
 * {@linkcode Writes.#forget}: what this process keeps of the keys written
 * (a value served but not stored, a read in flight, a running load) is
 * forgotten, so a call that starts once the write resolved never sees what
 * was there before it.
 *
 * @module
 */
import { timeoutOptions } from "../../../resp/shared/mod.ts";
import type { Identity, Keys } from "../../types.ts";
import type { Invalidations, NearTier, Versions } from "../coherence/mod.ts";
import type { Composition } from "../composition.ts";
import { checkTags, expireEntry, type Publisher } from "../fill/mod.ts";
import type { Reader, SharedKeys, Unstored } from "../read/mod.ts";
import type { Stats } from "../report/mod.ts";
import type { RedisLike } from "../../../resp/types.ts";
import type { CallOptions } from "./call_options.ts";

/** What the writes use of their cache. */
export interface WriteParts {
  readonly redis: RedisLike;
  readonly channel: string;
  readonly commandTimeoutMs: number;
  readonly publisher: Publisher;
  readonly versions: Versions;
  readonly invalidations: Invalidations;
  readonly unstored: Unstored;
  readonly reader: Reader;
  readonly strategies: Composition;
  readonly stats: Stats;
  readonly local: NearTier | undefined;
}

/** The writes of one cache. */
export class Writes {
  readonly #p: WriteParts;

  constructor(parts: WriteParts) {
    this.#p = parts;
  }

  /** Store `value` as a load would, dropping any lease so a running load cannot publish over it. */
  async set(keys: SharedKeys, identity: Identity, value: unknown, call: Pick<CallOptions, "ttlMs" | "tags">) {
    await this.#p.publisher.set(keys, value, call, identity);
    this.#forget(keys);
    this.#p.stats.mark("set", keys.data);
  }

  /** Drop the value and the lease of `keys` together, then announce it. */
  async invalidate(keys: SharedKeys): Promise<void> {
    const p = this.#p;
    const options = timeoutOptions(p.commandTimeoutMs, "commandTimeoutMs");
    // One DEL for both keys: the lease goes with the value, so an owner that
    // loaded before this point fails its token check instead of republishing.
    await p.redis.send(["DEL", keys.data, keys.lease], options);
    // Waiters on the dropped lease take over now instead of at its expiry
    // (with tracking the DEL itself wakes them; this is for subscribers), and
    // near tiers without tracking drop the key. After the DEL, not beside it:
    // on a cluster the two go to different nodes, and a message overtaking
    // its write would let a reader keep the old value.
    await p.redis.send(["PUBLISH", p.channel, keys.data], options);
    p.invalidations.wrote([keys.data, keys.lease]);
    this.#forget(keys);
  }

  /**
   * End the fresh window of `keys`' entry now and drop its lease, in one
   * script (see `fill/expire_script.ts`): the rewrite invalidates it on
   * every tracking connection, and the script announces it for the rest.
   */
  async expire(keys: SharedKeys): Promise<void> {
    const p = this.#p;
    await expireEntry(
      p.redis,
      { key: keys.data, lease: keys.lease, channel: p.channel },
      timeoutOptions(p.commandTimeoutMs, "commandTimeoutMs"),
    );
    p.invalidations.wrote([keys.data, keys.lease]);
    this.#forget(keys);
  }

  /** Give each of `tags` a new version: every entry carrying one becomes a miss. */
  async invalidateTags(tags: readonly string[]): Promise<void> {
    const p = this.#p;
    const checked = checkTags("invalidateTags", "tags", tags);
    if (checked.length === 0) return;
    p.invalidations.wrote(await p.versions.bump(checked, p.channel));
    p.unstored.forgetTags(checked);
    this.#forget(undefined);
    p.stats.emit({ type: "invalidate-tags", tags: checked });
  }

  /** Move the namespace epoch on: every entry becomes a miss. */
  async clear(): Promise<void> {
    const p = this.#p;
    const epoch = await p.versions.clear(p.channel);
    p.invalidations.wrote([p.versions.epochKey]);
    p.unstored.clear();
    this.#forget(undefined);
    // This process' near tier goes now; others' when Redis invalidates the epoch.
    p.local?.drop();
    p.stats.emit({ type: "clear", epoch });
  }

  // This process wrote `keys` (every key without them): a get that starts
  // once the write resolved must not see a value kept from before it, join a
  // read begun before it, or join a load that began before it (that load
  // publishes under an old version, or fails its lease check).
  #forget(keys: Keys | undefined): void {
    const p = this.#p;
    if (keys === undefined) p.reader.forgetAll();
    else {
      p.unstored.forget(keys.data);
      p.reader.forget(keys);
    }
    p.strategies.superseded(keys?.data);
  }
}
