/**
 * The innermost fill step and the write phase: stamp the epoch and tag
 * versions a load starts under, call the origin (through the strategies'
 * `load` hooks), let the write strategies shape what is stored, encode it
 * into an envelope and publish it. A request that carries a guard (the
 * lease's) publishes only while the guard holds; a rejection (the lease
 * expired or was invalidated) returns the value stored now, or the loaded
 * one if nothing is. `set()` writes through the same steps.
 *
 * @module
 */
import { isRedisReplyError } from "../../../resp/errors.ts";
import { timeoutOptions } from "../../../resp/shared/mod.ts";
import type { RedisLike } from "../../../resp/types.ts";
import type { ResolvedCodec } from "../../codec/mod.ts";
import type { Entry, FillRequest, Load, Outcome, StoredEntry, WritePlan } from "../../contract.ts";
import { CodecError, isCodecError } from "../../errors.ts";
import type { CacheEvent } from "../../events.ts";
import type { Identity, Keys } from "../../types.ts";
import { type Stamp, token, type Versions } from "../coherence/mod.ts";
import { BYTES_PER_MS, encodeEnvelope, loadMsOffset, type ServerClock, type Unstored } from "../read/mod.ts";
import { runOrigin } from "./chain.ts";
import type { ValueChoice } from "./loader_choices.ts";
import { type PublishMode, writePublication } from "./publish_script.ts";

/** What the publisher needs of its cache. */
export interface PublisherContext {
  readonly redis: RedisLike;
  readonly codec: ResolvedCodec;
  readonly negativeTtlMs: number;
  /** The write phase: the strategies' write hooks, shaping `plan` in place. */
  write(plan: WritePlan): void;
  readonly channel: string;
  readonly commandTimeoutMs: number;
  readonly maxValueBytes: number;
  /**
   * Whether `error` is Redis refusing writes (OOM, READONLY) and the cache
   * fails open: counted as `degraded`, and the caller gets the origin's value
   * uncached. The one check the strategies are handed too.
   */
  degrade(key: string, error: unknown): boolean;
  readonly versions: Versions;
  readonly now: () => number;
  /** The pipeline's `label` option, to name an identity whose value the codec refused. */
  readonly label: ((identity: Identity) => string) | undefined;
  /** Where a value served but not stored is kept. */
  readonly unstored?: Unstored;
  /** This client's estimate of the clock of the server that holds `key`, and how far it may be off (undefined until measured). */
  readonly clock?: Pick<ServerClock, "at" | "errorMs">;
  emit(event: CacheEvent): void;
  /** Re-read the entry after a rejected publication. */
  reread(keys: Keys): Promise<Entry | undefined>;
  /** Told after each write to Redis that went through (a near tier on invalidation messages forgets the key now). */
  wrote?(keys: Keys): void;
}

/** A shaped value ready to store. */
interface Stored {
  readonly envelope: string | Uint8Array;
  readonly px: number;
  /** The fresh window it is stored with. */
  readonly freshMs: number;
  /** What the envelope says besides the value and the server's publication time. */
  readonly fields: Omit<StoredEntry, "value" | "publishedAt" | "size">;
}

// Sizes a publication's deadline and the lease extension before it: the
// value must cross the network before the script runs (at BYTES_PER_MS).
const LARGE = 1 << 20;
// The codecs whose cost is known; a custom one's may be anything.
const BUILT_IN = new Set(["json", "string", "bytes"]);
// Values at least this long may take a while to encode (and to copy into the envelope).
const SLOW_ENCODE_LENGTH = 1 << 18;

/** Loads and publishes the values of one cache. */
export class Publisher {
  readonly #cache: PublisherContext;
  #lateReported = false;

  constructor(context: PublisherContext) {
    this.#cache = context;
  }

  /** The epoch and tag versions a load that starts now publishes under (a `getMany` wave stamps once). */
  stamp(tags: readonly string[]): Promise<Stamp> {
    return this.#cache.versions.stamp(tags);
  }

  /**
   * The innermost fill step of a `get`: the origin called through `load`
   * (the strategies' load hooks around `loader`), then the publication.
   */
  async loadAndPublish(
    req: FillRequest,
    load: Load,
    origin: () => Promise<unknown>,
    choice?: ValueChoice,
  ): Promise<Outcome> {
    const c = this.#cache;
    const key = req.keys.data;
    // Before the origin is called: a clear() or invalidateTags() landing
    // while it runs must leave this load's value a miss.
    const stamp = await c.versions.stamp(req.tags);
    // A load starts when the origin is called, past the load hooks: one
    // limit() sheds is not a load (nor a load error).
    let started: number | undefined;
    const call = () => {
      started = c.now();
      c.emit({ type: "load-start", key, background: req.background });
      return origin();
    };
    let value: unknown;
    try {
      value = (await runOrigin(load, { keys: [key], signal: req.signal, background: req.background }, call))[0];
    } catch (error) {
      if (started !== undefined) c.emit({ type: "load-end", key, durationMs: Math.max(0, c.now() - started), error });
      throw error;
    }
    started ??= c.now();
    const loadMs = Math.max(0, Math.ceil(c.now() - started));
    return await this.publish(req, value, loadMs, stamp, started, choice);
  }

  /**
   * Shape, encode and store `value` loaded for `req` (also the last step of
   * a `getMany` batch). `started` is when its load began, for `load-end`.
   */
  async publish(
    req: FillRequest,
    value: unknown,
    loadMs: number,
    stamp: Stamp,
    started: number,
    choice?: ValueChoice,
  ): Promise<Outcome> {
    const c = this.#cache;
    const key = req.keys.data;
    if (choice !== undefined) {
      if (choice.skipped) {
        // Nothing is written: an entry stored before keeps its deadline, and
        // the lease strategy releases (and announces) the lease at once.
        c.emit({ type: "load-end", key, durationMs: Math.max(0, c.now() - started) });
        c.emit({ type: "skip", key });
        return { from: "origin", value, published: false };
      }
      ({ req, stamp } = await choice.apply(req, stamp));
    }
    const guard = req.guard;
    if (guard?.extend !== undefined && this.#slowToEncode(value, guard)) {
      // The lease covers the origin call, not this cache's own encoding:
      // encoding a large value (or with a custom codec) blocks the event
      // loop for as long as it takes, so the extension is written first and
      // Redis applies it meanwhile. Awaiting the microtask the client
      // flushes on lets the command leave before the encoding starts.
      guard.extend(Math.max(this.#cache.commandTimeoutMs, 2 * (guard.leaseMs ?? 0))).catch(() => false);
      await null;
    }
    let stored: Stored | undefined;
    try {
      stored = this.#shape(key, value, { ttlMs: req.ttlMs, tags: req.tags, loadMs, stamp }, req.identity);
    } catch (error) {
      c.emit({ type: "load-end", key, durationMs: Math.max(0, c.now() - started), error });
      throw error;
    }
    c.emit({ type: "load-end", key, durationMs: Math.max(0, c.now() - started) });
    if (stored === undefined) return { from: "origin", value, published: false };
    // A request that could not take its lease because Redis refuses writes
    // publishes nothing: once Redis accepts writes again, an unguarded SET
    // could land over a newer value another process published under its lease.
    if (req.degraded === true) return this.#unstored(key, value, stored, started);
    const timeoutMs = this.#deadline(stored);
    if (guard?.extend !== undefined && timeoutMs > c.commandTimeoutMs) {
      // A large value: keep the lease until it has crossed the network, or
      // its publication is rejected as late however fast the origin was.
      await guard.extend(timeoutMs).catch(() => false);
    }
    const mode: PublishMode = guard === undefined ? "plain" : "guarded";
    let accepted: boolean;
    try {
      accepted = await this.#write(req.keys, stored, mode, guard?.token, timeoutMs, started);
    } catch (error) {
      if (!this.#cache.degrade(key, error)) throw error;
      return this.#unstored(key, value, stored, started);
    }
    if (accepted) {
      c.unstored?.stored(key, started);
      return { from: "origin", value, published: true, freshMs: stored.freshMs };
    }
    const reason =
      "its lease expired or was taken (leaseMs shorter than the load, or an invalidation or set() meanwhile)";
    c.emit({ type: "late-publish", key, reason, first: !this.#lateReported });
    this.#lateReported = true;
    const entry = await c.reread(req.keys);
    return entry === undefined
      ? { from: "origin", value, published: false }
      : { from: "cache", value: entry.value, entry, published: false };
  }

  /** `set()`: store `value` as a load would, dropping any lease so a running load cannot publish over it. */
  async set(
    keys: Keys,
    value: unknown,
    options: { ttlMs: number; tags: readonly string[] },
    identity: Identity,
  ): Promise<void> {
    // A set() is its own load: it began when it was called.
    const started = this.#cache.now();
    const stamp = await this.#cache.versions.stamp(options.tags);
    const stored = this.#shape(keys.data, value, { ...options, loadMs: 0, stamp }, identity)!;
    await this.#write(keys, stored, "force", undefined, this.#deadline(stored), started);
  }

  // Whether encoding `value` may take long enough to lose the lease: a
  // custom codec (its cost is unknown), a large string or byte array, or a
  // lease already past half its time.
  #slowToEncode(value: unknown, guard: NonNullable<FillRequest["guard"]>): boolean {
    if (!BUILT_IN.has(this.#cache.codec.id)) return true;
    if ((typeof value === "string" || value instanceof Uint8Array) && value.length >= SLOW_ENCODE_LENGTH) return true;
    return guard.expiresAt !== undefined && guard.leaseMs !== undefined &&
      this.#cache.now() > guard.expiresAt - guard.leaseMs / 2;
  }

  // A value served uncached because Redis refuses writes: kept in this
  // process (see unstored.ts) so its later reads never serve an older one.
  // Kept for twice its physical window: an older entry published after it
  // (its load began under a lease taken before writes were refused) lives
  // that long at most unless its lease is renewed.
  #unstored(key: string, value: unknown, stored: Stored, started: number): Outcome {
    const u = this.#cache.unstored;
    const clock = this.#cache.clock;
    const serverNow = clock?.at(key);
    if (u !== undefined && serverNow !== undefined) {
      // The latest the server's clock may have read when its load ended (and
      // began: loadMs is rounded up), so that an entry stored elsewhere is
      // taken for a newer one only when it surely is.
      const publishedAt = serverNow + (clock!.errorMs(key) ?? 0) + 1;
      const entry = { ...stored.fields, value, publishedAt, size: stored.envelope.length };
      const now = this.#cache.now();
      u.keep(key, entry, now + 2 * stored.px, now, started);
    }
    return { from: "origin", value, published: false };
  }

  #deadline(stored: Stored): number {
    const bytes = stored.envelope.length;
    return bytes < LARGE
      ? this.#cache.commandTimeoutMs
      : this.#cache.commandTimeoutMs + Math.ceil(bytes / BYTES_PER_MS);
  }

  #write(
    keys: Keys,
    stored: Stored,
    mode: PublishMode,
    guardToken: string | undefined,
    timeoutMs: number,
    started: number,
  ) {
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
    const publication = {
      key: keys.data,
      lease: keys.lease,
      mode,
      envelope: stored.envelope,
      px: stored.px,
      channel: c.channel,
      ...(guardToken === undefined ? {} : { token: guardToken }),
      ...(began === undefined ? {} : { began }),
    };
    const written = writePublication(c.redis, publication, timeoutOptions(timeoutMs, "commandTimeoutMs"));
    if (c.wrote === undefined) return written;
    return written.then((ok) => {
      c.wrote!(keys);
      return ok;
    });
  }

  // A value the codec refused, named by its key and, with a `label`, its
  // identity's label; the path inside the value comes from the codec.
  #codecError(key: string, identity: Identity, error: unknown): CodecError {
    const c = this.#cache;
    let label: string | undefined;
    try {
      label = c.label === undefined ? undefined : String(c.label(identity));
    } catch {
      // A label that throws must not hide the codec's reason.
    }
    const name = label === undefined ? key : `${label} (${key})`;
    const inner = isCodecError(error) ? error : undefined;
    const reason = error instanceof Error ? error.message : String(error);
    const message = `Cannot cache ${name}: the ${c.codec.name} codec cannot encode the loaded value (${reason})`;
    return new CodecError(message, {
      path: inner?.path ?? "$",
      key,
      ...(label === undefined ? {} : { label }),
      cause: error,
    });
  }

  // The write phase: windows from the write strategies, then the envelope.
  // Undefined when nothing is to be stored (a not-found with negativeTtlMs 0).
  #shape(
    key: string,
    value: unknown,
    o: { ttlMs: number; tags: readonly string[]; loadMs: number; stamp: Stamp },
    identity: Identity,
  ): Stored | undefined {
    const c = this.#cache;
    const negative = value === undefined;
    if (negative && c.negativeTtlMs === 0) return undefined;
    const plan: WritePlan = {
      negative,
      freshMs: negative ? c.negativeTtlMs : o.ttlMs,
      staleMs: 0,
      ifErrorMs: 0,
      loadMs: o.loadMs,
    };
    if (!negative) c.write(plan);
    const px = plan.freshMs + plan.staleMs + plan.ifErrorMs;
    if (!Number.isInteger(px) || px <= 0 || plan.freshMs <= 0) {
      throw new RangeError(
        `Cannot publish ${key}: the write phase produced a TTL of ${px} ms (fresh ${plan.freshMs} ms)`,
      );
    }
    let payload: string | Uint8Array;
    let compressed = false;
    try {
      payload = negative ? "" : c.codec.encode(value);
      const packed = negative ? undefined : c.codec.compress?.(payload);
      if (packed !== undefined) [payload, compressed] = [packed, true];
    } catch (error) {
      throw this.#codecError(key, identity, error);
    }
    // A string is sent as UTF-8: at most 3 bytes per UTF-16 code unit, so
    // only a string that might be over the limit is measured.
    if (payload.length * (typeof payload === "string" ? 3 : 1) > c.maxValueBytes) {
      const bytes = typeof payload === "string" ? utf8Length(payload) : payload.length;
      if (bytes > c.maxValueBytes) {
        throw new RangeError(
          `Cannot cache ${key}: the encoded value is ${bytes} bytes, over maxValueBytes (${c.maxValueBytes})`,
        );
      }
    }
    const fields = {
      negative,
      compressed,
      freshMs: plan.freshMs,
      staleMs: plan.staleMs,
      ifErrorMs: plan.ifErrorMs,
      loadMs: plan.loadMs,
      id: token(),
      epoch: o.stamp.epoch,
      codec: c.codec.id,
      etag: undefined,
      tags: negative ? [] : o.tags,
      tagVersions: negative ? [] : o.stamp.tagVersions,
    };
    return { envelope: encodeEnvelope(fields, payload), px, freshMs: plan.freshMs, fields };
  }
}

/** Whether Redis refused a write for lack of memory or because it is a replica. */
export function isWriteRefusal(error: unknown): boolean {
  return isRedisReplyError(error) && (error.code === "OOM" || error.code === "READONLY");
}

/** The UTF-8 length of `text` (a lone surrogate counts 3 bytes, as its replacement character is sent). */
function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}
