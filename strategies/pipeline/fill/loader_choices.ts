/**
 * What a loader may decide from what it loaded: this value's TTL
 * (`setTtlMs`), its tags (`setTags`), or not to cache it at all (`skip`).
 * One {@linkcode ValueChoice} per loaded value, read by the publisher; the
 * contexts handed to a `get`'s loader and to a `getMany`'s `loadMany` write
 * into them, validated at the call, and refuse once the load settled.
 *
 * @module
 */
import { intInRange } from "../../../resp/shared/mod.ts";
import type { RedisLike } from "../../../resp/types.ts";
import type { FillRequest } from "../../contract.ts";
import type { BatchLoaderContext, Identity, LoaderContext } from "../../types.ts";
import { type Stamp, token, type Versions } from "../coherence/mod.ts";
import { checkWindow } from "../../limits.ts";
import { checkTags } from "./tags.ts";

/** What the loader chose for one value; untouched fields keep the call's settings. */
export class ValueChoice {
  ttlMs: number | undefined;
  tags: readonly string[] | undefined;
  /** The tag versions read when `setTags` was called: invalidations from then on are caught. */
  tagVersions: Promise<readonly string[]> | undefined;
  skipped = false;

  /**
   * The request and stamp the value is published with: the chosen TTL
   * (write strategies then apply to it) and tags (with the versions read at
   * `setTags`; the epoch stays the one read before the origin was called).
   */
  async apply(req: FillRequest, stamp: Stamp): Promise<{ req: FillRequest; stamp: Stamp }> {
    if (this.ttlMs === undefined && this.tags === undefined) return { req, stamp };
    const tags = this.tags ?? req.tags;
    const tagVersions = this.tagVersions === undefined ? stamp.tagVersions : await this.tagVersions;
    return {
      req: { ...req, ttlMs: this.ttlMs ?? req.ttlMs, tags },
      stamp: { epoch: stamp.epoch, tagVersions },
    };
  }
}

/** What the choices check against. */
export interface ChoiceContext {
  /** The strategies' check of a TTL (a jitter spread not below it is refused). */
  checkTtl(ttlMs: number): void;
  readonly versions: Versions;
  readonly redis: RedisLike;
  readonly commandTimeoutMs: number;
}

/** The choices of one origin call (one value for a loader, one per missing identity for `loadMany`). */
export class LoaderChoices {
  readonly #cache: ChoiceContext;
  readonly items: ValueChoice[];
  #settled = false;
  readonly #offline: boolean;

  /**
   * @param context what the choices check against.
   * @param count how many values the origin call loads.
   * @param offline Redis cannot be reached: tag versions are the known ones, never read.
   */
  constructor(context: ChoiceContext, count: number, offline = false) {
    this.#offline = offline;
    this.#cache = context;
    this.items = Array.from({ length: count }, () => new ValueChoice());
  }

  /** The load is over: the setters refuse from now on. */
  settle(): void {
    this.#settled = true;
  }

  setTtlMs(index: number, ms: unknown): void {
    const choice = this.#choice("setTtlMs", index);
    const ttlMs = checkWindow("setTtlMs", "ttlMs", ms, 1);
    // A jitter spread not below this TTL is refused here, as a call's ttlMs is.
    this.#cache.checkTtl(ttlMs);
    choice.ttlMs = ttlMs;
  }

  setTags(index: number, tags: unknown): void {
    const choice = this.#choice("setTags", index);
    const checked = checkTags("setTags", "tags", tags);
    choice.tags = checked;
    // Read now: an invalidateTags() from this moment on leaves the value a miss.
    const versions = Promise.all(checked.map((tag) => this.#version(tag)));
    // Awaited by the publication; a failure here fails that, never an unhandled rejection.
    versions.catch(() => {});
    choice.tagVersions = versions;
  }

  // A tag's version as of now (see Versions.tagVersionNow). Nothing to read
  // while Redis is down: the known one, or a version of its own that matches
  // nothing once it is back.
  #version(tag: string): Promise<string> {
    const versions = this.#cache.versions;
    if (this.#offline) return Promise.resolve(versions.knownTag(tag) ?? token());
    return versions.tagVersionNow(tag);
  }

  skip(index: number): void {
    this.#choice("skip", index).skipped = true;
  }

  #choice(where: string, index: number): ValueChoice {
    if (this.#settled) {
      throw new TypeError(`Cannot ${where}: the load is over (call it before the loader settles)`);
    }
    if (this.items.length === 1 && index === 0) return this.items[0]!;
    return this.items[intInRange(where, "index", index, 0, this.items.length - 1)]!;
  }

  /** The context a `get`'s loader receives. */
  loaderContext(signal: AbortSignal, identity: Identity): LoaderContext {
    return {
      signal,
      identity,
      setTtlMs: (ms: number) => this.setTtlMs(0, ms),
      setTags: (tags: readonly string[]) => this.setTags(0, tags),
      skip: () => this.skip(0),
    };
  }

  /** The context a `getMany`'s `loadMany` receives: the same choices per index into `missing`. */
  batchContext(signal: AbortSignal): BatchLoaderContext {
    return {
      signal,
      setTtlMs: (index: number, ms: number) => this.setTtlMs(index, ms),
      setTags: (index: number, tags: readonly string[]) => this.setTags(index, tags),
      skip: (index: number) => this.skip(index),
    };
  }
}
