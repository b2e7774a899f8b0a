/**
 * One process of the model-based test (model.test.ts): a cache with
 * `lease()` that runs the operations the test sends it and answers what
 * each returned. The test process runs one itself; `_model_worker.ts` runs
 * another in a second OS process. Versions come from one Redis counter
 * (INCR) shared by both, taken when a load starts or a set is made, so a
 * lower version is an older value whichever process made it.
 */
import { connect, type RedisClient } from "../../../resp/client.ts";
import { coalesce } from "../../../strategies/coalesce.ts";
import { lease } from "../../../strategies/lease.ts";
import { near } from "../../../strategies/near.ts";
import { pipeline } from "../../../strategies/pipeline/pipeline.ts";
import type { Cache } from "../../../strategies/pipeline/cache_types.ts";

/** A cached value: its identity, version and the tags it was loaded or set with; `set` when set() wrote it. */
export interface Value {
  readonly id: string;
  readonly v: number;
  readonly tags: readonly string[];
  readonly set?: true;
}

/** How a load behaves: a pause before it answers, and whether it fails. */
export interface LoadPlan {
  readonly delayMs: number;
  readonly fail: boolean;
}

/** An operation of the model. */
export type Op =
  | { readonly kind: "get"; readonly id: string; readonly tags: readonly string[]; readonly load: LoadPlan }
  | {
    readonly kind: "getMany";
    readonly ids: readonly string[];
    readonly tags: readonly string[];
    readonly load: LoadPlan;
  }
  | { readonly kind: "set"; readonly id: string; readonly tags: readonly string[] }
  | { readonly kind: "peek"; readonly id: string }
  | { readonly kind: "invalidate"; readonly id: string }
  | { readonly kind: "invalidateTags"; readonly tags: readonly string[] }
  | { readonly kind: "clear" }
  | {
    readonly kind: "warm";
    readonly ids: readonly string[];
    readonly tags: readonly string[];
    readonly load: LoadPlan;
  }
  /** One round trip on the cache's connection: an invalidation Redis sent before it has arrived. */
  | { readonly kind: "hop" };

/** What an operation returned: values (get, getMany, peek, set: the value it wrote), or the error's message. */
export type Result =
  | { readonly ok: true; readonly values: readonly (Value | null)[] }
  | { readonly ok: false; readonly error: string };

/** The message of a load the plan made fail. */
export const ORIGIN_FAILED = "origin failed (planned)";

const COUNTER = "model:versions";

/** A cache and its connections, rebuilt on a fresh namespace for each sequence. */
export class ModelProcess {
  readonly #redis: RedisClient;
  readonly #control: RedisClient;
  readonly #near: boolean;
  #cache: Cache<Value> | undefined;

  private constructor(redis: RedisClient, control: RedisClient, withNear: boolean) {
    this.#redis = redis;
    this.#control = control;
    this.#near = withNear;
  }

  static async open(url: string, withNear: boolean): Promise<ModelProcess> {
    return new ModelProcess(await connect({ url, resp: 3 }), await connect({ url }), withNear);
  }

  /** Start over on `namespace` (a new cache: nothing of the previous sequence remains in memory). */
  async reset(namespace: string): Promise<void> {
    await this.#cache?.close();
    this.#cache = pipeline<Value>(
      { redis: this.#redis, ttlMs: 60_000, namespace },
      ...(this.#near ? [near()] : []),
      coalesce(),
      lease({ leaseMs: 5_000, waitMs: 10_000 }),
    );
  }

  /** The current version counter (the highest version any load or set took so far). */
  async counter(): Promise<number> {
    return Number(await this.#control.send(["GET", COUNTER]) ?? 0);
  }

  async run(op: Op): Promise<Result> {
    try {
      return { ok: true, values: await this.#run(op) };
    } catch (error) {
      return { ok: false, error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
    }
  }

  async close(): Promise<void> {
    await this.#cache?.close();
    this.#redis.destroy();
    this.#control.destroy();
  }

  async #version(): Promise<number> {
    return Number(await this.#control.send(["INCR", COUNTER]));
  }

  async #load(id: string, tags: readonly string[], plan: LoadPlan): Promise<Value> {
    const v = await this.#version();
    if (plan.delayMs > 0) await new Promise((r) => setTimeout(r, plan.delayMs));
    if (plan.fail) throw new Error(ORIGIN_FAILED);
    return { id, v, tags };
  }

  async #run(op: Op): Promise<(Value | null)[]> {
    const cache = this.#cache!;
    switch (op.kind) {
      case "get":
        return [await cache.get(op.id, () => this.#load(op.id, op.tags, op.load), { tags: op.tags })];
      case "getMany":
        return (await cache.getMany(
          op.ids,
          (missing) => Promise.all(missing.map((id) => this.#load(String(id), op.tags, op.load))),
          { tags: op.tags },
        )).map((v) => v ?? null);
      case "set": {
        const value: Value = { id: op.id, v: await this.#version(), tags: op.tags, set: true };
        await cache.set(op.id, value, { tags: op.tags });
        return [value];
      }
      case "peek":
        return [(await cache.peek(op.id)) ?? null];
      case "invalidate":
        await cache.invalidate(op.id);
        return [];
      case "invalidateTags":
        await cache.invalidateTags(op.tags);
        return [];
      case "clear":
        await cache.clear();
        return [];
      case "warm":
        await cache.warm(op.ids, ({ identity }) => this.#load(String(identity), op.tags, op.load), {
          tags: op.tags,
          concurrency: 2,
        });
        return [];
      case "hop":
        await this.#redis.send(["PING"]);
        return [];
    }
  }
}
