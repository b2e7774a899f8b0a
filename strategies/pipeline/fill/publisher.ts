/**
 * The innermost fill step and the write phase: stamp the epoch and tag
 * versions a load starts under, call the origin (through the strategies'
 * `load` hooks), let the write strategies shape what is stored, encode it
 * into an envelope and publish it. A request that carries a guard (the
 * lease's) publishes only while the guard holds; a rejection (the lease
 * expired or was invalidated) returns the value stored now, or the loaded
 * one if nothing is. `set()` writes through the same steps.
 *
 * With a `schema`, a loaded value is validated before it is stored (the
 * loader's value is stored, the schema's output returned; a value it
 * refuses is a `SchemaError` and nothing is stored). A load that answered
 * `ctx.notModified()` republishes the entry it replaces: a header alone,
 * whose script keeps the stored payload, epoch and tags (see
 * `publish_script.ts`); when the key no longer holds that entry, nothing is
 * stored: callers get the previous value (the key emptied: its versions are
 * not known here, so sending it again could revive a value a `clear()`
 * dropped) or the newer entry stored there.
 *
 * @module
 */
import { isRedisReplyError } from "../../../resp/errors.ts";
import type { RedisLike } from "../../../resp/types.ts";
import type { Entry, FillRequest, Load, Outcome } from "../../contract.ts";
import { SchemaError } from "../../errors.ts";
import type { CacheEvent } from "../../events.ts";
import type { StandardSchemaIssue, StandardSchemaV1 } from "../../schema.ts";
import type { Identity, Keys } from "../../types.ts";
import type { Stamp, Versions } from "../coherence/mod.ts";
import { type ServerClock, type Unstored, validate } from "../read/mod.ts";
import { runOrigin } from "./chain.ts";
import type { ValueChoice } from "./loader_choices.ts";
import type { PublishMode } from "./publish_script.ts";
import { shape, type ShapeContext, type Stored, valueName } from "./shape.ts";
import { Writer, type WriterContext } from "./writer.ts";
import { issuePath } from "../../errors.ts";

/** What the publisher needs of its cache. */
export interface PublisherContext extends ShapeContext, WriterContext {
  readonly redis: RedisLike;
  readonly channel: string;
  readonly commandTimeoutMs: number;
  /** The pipeline's `schema`, if any: a loaded value is validated before it is stored. */
  readonly schema?: StandardSchemaV1 | undefined;
  /**
   * Whether `error` is Redis refusing writes (OOM, READONLY) and the cache
   * fails open: counted as `degraded`, and the caller gets the origin's value
   * uncached. The one check the strategies are handed too.
   */
  degrade(key: string, error: unknown): boolean;
  /**
   * Whether `error` says Redis could not be reached while a loaded value was
   * written and the cache serves from this process meanwhile (`onRedisDown:
   * "local"`): the outage is then marked and counted, and the value served
   * and kept as if Redis had been down when the get began. Absent otherwise.
   */
  unreachable?(key: string, error: unknown): boolean;
  readonly versions: Versions;
  readonly now: () => number;
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

// The codecs whose cost is known; a custom one's may be anything.
const BUILT_IN = new Set(["json", "string", "bytes"]);
// Values at least this long may take a while to encode (and to copy into the envelope).
const SLOW_ENCODE_LENGTH = 1 << 18;

/** Loads and publishes the values of one cache. */
export class Publisher {
  readonly #cache: PublisherContext;
  readonly #writer: Writer;
  #lateReported = false;

  constructor(context: PublisherContext) {
    this.#cache = context;
    this.#writer = new Writer(context);
  }

  /** The epoch and tag versions a load that starts now publishes under (a `getMany` wave stamps once). */
  stamp(tags: readonly string[]): Promise<Stamp> {
    return this.#cache.versions.stamp(tags);
  }

  /** The same, for a load that starts while Redis cannot be reached: the known versions, without I/O. */
  stampOffline(tags: readonly string[]): Stamp {
    return this.#cache.versions.stampOffline(tags);
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
    const stamp = req.offline === true ? c.versions.stampOffline(req.tags) : await c.versions.stamp(req.tags);
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
    if (choice?.republishes(value) === true) return this.#republish(req, choice, loadMs, stamp, started);
    // Callers get the schema's output; the loader's value is what is stored.
    let output = value;
    if (c.schema !== undefined && value !== undefined) {
      const verdict = await validate(c.schema, value);
      if (verdict.issues !== undefined) {
        const error = this.#schemaError(key, req.identity, verdict.issues);
        c.emit({ type: "load-end", key, durationMs: Math.max(0, c.now() - started), error });
        throw error;
      }
      output = verdict.value;
    }
    if (choice !== undefined) {
      if (choice.skipped) {
        // Nothing is written: an entry stored before keeps its deadline, and
        // the lease strategy releases (and announces) the lease at once.
        c.emit({ type: "load-end", key, durationMs: Math.max(0, c.now() - started) });
        c.emit({ type: "skip", key });
        return { from: "origin", value: output, published: false };
      }
      ({ req, stamp } = await choice.apply(req, stamp));
    }
    return this.#store(req, value, output, loadMs, stamp, started, choice?.etag);
  }

  // Store `value` (what the loader returned), whose callers get `output`.
  async #store(
    req: FillRequest,
    value: unknown,
    output: unknown,
    loadMs: number,
    stamp: Stamp,
    started: number,
    etag: string | undefined,
  ): Promise<Outcome> {
    const c = this.#cache;
    const key = req.keys.data;
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
      stored = shape(c, key, value, { ttlMs: req.ttlMs, tags: req.tags, loadMs, stamp, etag }, req.identity);
    } catch (error) {
      c.emit({ type: "load-end", key, durationMs: Math.max(0, c.now() - started), error });
      throw error;
    }
    c.emit({ type: "load-end", key, durationMs: Math.max(0, c.now() - started) });
    if (stored === undefined) return { from: "origin", value: output, published: false };
    // A request that could not take its lease because Redis refuses writes
    // publishes nothing: once Redis accepts writes again, an unguarded SET
    // could land over a newer value another process published under its lease.
    if (req.offline === true) return this.#unstored(key, output, stored, started, "redis-down");
    if (req.degraded === true) return this.#unstored(key, output, stored, started, "write-refused");
    const timeoutMs = this.#writer.deadline(stored);
    if (guard?.extend !== undefined && timeoutMs > c.commandTimeoutMs) {
      // A large value: keep the lease until it has crossed the network, or
      // its publication is rejected as late however fast the origin was.
      await guard.extend(timeoutMs).catch(() => false);
    }
    const mode: PublishMode = guard === undefined ? "plain" : "guarded";
    let accepted: boolean;
    try {
      accepted = await this.#writer.write(req.keys, stored, mode, guard?.token, timeoutMs, started);
    } catch (error) {
      // Redis died while the origin answered: its value is what callers
      // get, and what later gets in the outage serve, or the origin would
      // be called once more for a value already in hand.
      if (this.#cache.unreachable?.(key, error) === true) {
        return this.#unstored(key, output, stored, started, "redis-down");
      }
      if (!this.#cache.degrade(key, error)) throw error;
      return this.#unstored(key, output, stored, started, "write-refused");
    }
    if (accepted) {
      c.unstored?.stored(key, started);
      return { from: "origin", value: output, published: true, freshMs: stored.freshMs };
    }
    return this.#late(req, output);
  }

  // A publication its lease no longer allowed: the value stored now, if any.
  async #late(req: FillRequest, output: unknown): Promise<Outcome> {
    const reason =
      "its lease expired or was taken (leaseMs shorter than the load, or an invalidation or set() meanwhile)";
    this.#cache.emit({ type: "late-publish", key: req.keys.data, reason, first: !this.#lateReported });
    this.#lateReported = true;
    return await this.#current(req, output);
  }

  async #current(req: FillRequest, output: unknown): Promise<Outcome> {
    const entry = await this.#cache.reread(req.keys);
    return entry === undefined
      ? { from: "origin", value: output, published: false }
      : { from: "cache", value: entry.value, entry, published: false };
  }

  // `ctx.notModified()`: the previous entry again, with a fresh window, from
  // a header alone.
  async #republish(
    req: FillRequest,
    choice: ValueChoice,
    loadMs: number,
    stamp: Stamp,
    started: number,
  ): Promise<Outcome> {
    const c = this.#cache;
    const key = req.keys.data;
    // Counted once the republication settled, whatever its outcome: a reader
    // that saw the counter move then reads the fresh window, not the old one.
    try {
      return await this.#republished(req, choice, loadMs, stamp, started);
    } finally {
      c.emit({ type: "not-modified", key });
    }
  }

  async #republished(
    req: FillRequest,
    choice: ValueChoice,
    loadMs: number,
    stamp: Stamp,
    started: number,
  ): Promise<Outcome> {
    const c = this.#cache;
    const key = req.keys.data;
    const previous = choice.previous!;
    ({ req, stamp } = await choice.apply(req, stamp));
    const etag = choice.etag ?? previous.etag;
    let stored: Stored;
    try {
      stored = shape(
        c,
        key,
        previous.value,
        { ttlMs: req.ttlMs, tags: req.tags, loadMs, stamp, etag, headerOnly: true },
        req.identity,
      )!;
    } catch (error) {
      c.emit({ type: "load-end", key, durationMs: Math.max(0, c.now() - started), error });
      throw error;
    }
    c.emit({ type: "load-end", key, durationMs: Math.max(0, c.now() - started) });
    if (req.degraded === true) return { from: "origin", value: previous.value, published: false };
    const guard = req.guard;
    let result;
    try {
      result = await this.#writer.republish(
        req.keys,
        stored,
        guard?.token,
        started,
        previous.id,
        choice.tags === undefined,
      );
    } catch (error) {
      if (c.unreachable?.(key, error) === true) {
        return { ...this.#unstored(key, previous.value, stored, started, "redis-down"), notModified: true };
      }
      if (!c.degrade(key, error)) throw error;
      return { from: "origin", value: previous.value, published: false };
    }
    if (result === "stored") {
      c.unstored?.stored(key, started);
      return { from: "origin", value: previous.value, published: true, freshMs: stored.freshMs, notModified: true };
    }
    if (result === "lost") return this.#late(req, previous.value);
    // Another publication replaced the entry meanwhile: it is newer.
    if (result === "replaced") return this.#current(req, previous.value);
    // Expired or evicted while the load ran: served, not stored (see the module's doc).
    return { from: "origin", value: previous.value, published: false, notModified: true };
  }

  #schemaError(key: string, identity: Identity, issues: readonly StandardSchemaIssue[]): SchemaError {
    const { name, label } = valueName(this.#cache, key, identity);
    const more = issues.length > 1 ? ` (and ${issues.length - 1} more issue${issues.length > 2 ? "s" : ""})` : "";
    const message = `Cannot cache ${name}: the schema refused the value at ${issuePath(issues[0])} (${
      issues[0]?.message ?? "no message"
    })${more}`;
    return new SchemaError(message, { issues, key, ...(label === undefined ? {} : { label }) });
  }

  /** `set()`: store `value` as a load would, dropping any lease so a running load cannot publish over it. */
  async set(
    keys: Keys,
    value: unknown,
    options: { ttlMs: number; tags: readonly string[] },
    identity: Identity,
  ): Promise<void> {
    // A set() is its own load: it began when it was called.
    const c = this.#cache;
    const started = c.now();
    if (c.schema !== undefined) {
      // What is written can be read: a value every reader would refuse is refused here.
      const verdict = await validate(c.schema, value);
      if (verdict.issues !== undefined) throw this.#schemaError(keys.data, identity, verdict.issues);
    }
    const stamp = await c.versions.stamp(options.tags);
    const stored = shape(c, keys.data, value, { ...options, loadMs: 0, stamp, etag: undefined }, identity)!;
    await this.#writer.write(keys, stored, "force", undefined, this.#writer.deadline(stored), started);
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
  #unstored(
    key: string,
    value: unknown,
    stored: Stored,
    started: number,
    degraded: "redis-down" | "write-refused",
  ): Outcome {
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
    return { from: "origin", value, published: false, degraded };
  }
}

/** Whether Redis refused a write for lack of memory or because it is a replica. */
export function isWriteRefusal(error: unknown): boolean {
  return isRedisReplyError(error) && (error.code === "OOM" || error.code === "READONLY");
}
