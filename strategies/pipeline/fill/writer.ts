/**
 * How a shaped value reaches Redis: one publication (or republication)
 * script, whose deadline grows with the value's size, told when the load
 * began on the server's clock, and followed, where the cache hears its
 * writes through messages, by forgetting the key here at once.
 *
 * @module
 */
import { timeoutOptions } from "../../../resp/shared/mod.ts";
import type { RedisLike } from "../../../resp/types.ts";
import type { Keys } from "../../types.ts";
import { BYTES_PER_MS, loadMsOffset, type ServerClock } from "../read/mod.ts";
import {
  type Publication,
  type PublishMode,
  type Republished,
  writePublication,
  writeRepublication,
} from "./publish_script.ts";
import type { Stored } from "./shape.ts";

/** What the writer needs of its cache. */
export interface WriterContext {
  readonly redis: RedisLike;
  readonly channel: string;
  readonly commandTimeoutMs: number;
  readonly now: () => number;
  /** This client's estimate of the clock of the server that holds `key`, and how far it may be off (undefined until measured). */
  readonly clock?: Pick<ServerClock, "at" | "errorMs">;
  /** Told after each write to Redis that went through (a near tier on invalidation messages forgets the key now). */
  wrote?(keys: Keys): void;
}

// Sizes a publication's deadline: the value must cross the network before
// the script runs (at BYTES_PER_MS).
const LARGE = 1 << 20;

/** Writes the shaped values of one cache. */
export class Writer {
  readonly #cache: WriterContext;

  constructor(context: WriterContext) {
    this.#cache = context;
  }

  /** How long the publication of `stored` may take: commandTimeoutMs, more for a large value. */
  deadline(stored: Stored): number {
    const bytes = stored.envelope.length;
    return bytes < LARGE
      ? this.#cache.commandTimeoutMs
      : this.#cache.commandTimeoutMs + Math.ceil(bytes / BYTES_PER_MS);
  }

  /** Publish `stored`; `false` when a guarded publication lost its lease. */
  write(
    keys: Keys,
    stored: Stored,
    mode: PublishMode,
    guardToken: string | undefined,
    timeoutMs: number,
    started: number,
  ): Promise<boolean> {
    const c = this.#cache;
    const publication = this.#publication(keys, stored, mode, guardToken, started);
    const written = writePublication(c.redis, publication, timeoutOptions(timeoutMs, "commandTimeoutMs"));
    if (c.wrote === undefined) return written;
    return written.then((ok) => {
      c.wrote!(keys);
      return ok;
    });
  }

  /**
   * Republish the payload stored under publication `id` with the header
   * `stored` (guarded when a token is given), keeping its epoch, and its
   * tags when `keepTags`.
   */
  async republish(
    keys: Keys,
    stored: Stored,
    guardToken: string | undefined,
    started: number,
    id: string,
    keepTags: boolean,
  ): Promise<Republished> {
    const c = this.#cache;
    const mode = guardToken === undefined ? "plain" : "guarded";
    const result = await writeRepublication(
      c.redis,
      this.#publication(keys, stored, mode, guardToken, started),
      id,
      keepTags,
      timeoutOptions(c.commandTimeoutMs, "commandTimeoutMs"),
    );
    if (result === "stored") c.wrote?.(keys);
    return result;
  }

  #publication(keys: Keys, stored: Stored, mode: PublishMode, guardToken: string | undefined, started: number) {
    const c = this.#cache;
    // When the load began, on the server's clock: the script measures from
    // there, so a write that arrives late is not taken for a later load.
    // The earliest it may have been: a kept value elsewhere (unstored.ts)
    // yields to this one only when it surely began later.
    const serverNow = c.clock?.at(keys.data);
    const began = serverNow === undefined ? undefined : {
      at: serverNow - (c.now() - started) - (c.clock!.errorMs(keys.data) ?? 0),
      loadMs: stored.fields.loadMs,
      offset: loadMsOffset(stored.fields),
    };
    const publication: Publication = {
      key: keys.data,
      lease: keys.lease,
      mode,
      envelope: stored.envelope,
      px: stored.px,
      channel: c.channel,
      ...(guardToken === undefined ? {} : { token: guardToken }),
      ...(began === undefined ? {} : { began }),
    };
    return publication;
  }
}
