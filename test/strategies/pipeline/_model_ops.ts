/**
 * One process of the model-based test (model.test.ts): a cache with
 * `lease()` that runs the operations the test sends it and answers what
 * each returned. The test process runs one itself; `_model_worker.ts` runs
 * another in a second OS process. Versions come from one Redis counter
 * (INCR) shared by both, taken when a load starts or a set is made, so a
 * lower version is an older value whichever process made it. A loaded value
 * also says which operation's loader made it, in which process, and what
 * that loader told the cache about it (`skip()`, `setTtlMs()`), so the
 * model can tell a value this call loaded from one stored before.
 */
import { connect, type RedisClient } from "../../../resp/client.ts";
import { coalesce } from "../../../strategies/coalesce.ts";
import { lease } from "../../../strategies/lease.ts";
import { near } from "../../../strategies/near.ts";
import { pipeline } from "../../../strategies/pipeline/pipeline.ts";
import type { Cache } from "../../../strategies/cache.ts";

/**
 * A cached value: its identity, version and the tags it was loaded or set
 * with; `set` when set() wrote it. A loaded one carries `by`, the number of
 * the operation whose loader made it, and `p`, the process; `skip` when
 * that loader called skip(), `ttlMs` the last setTtlMs() it called.
 */
export interface Value {
  readonly id: string;
  readonly v: number;
  readonly tags: readonly string[];
  readonly set?: true;
  readonly by?: number;
  readonly p?: 0 | 1;
  readonly skip?: true;
  readonly ttlMs?: number;
}

/** What a loader tells the cache about one identity's value: skip() it, and the setTtlMs() calls, in order. */
export interface LoadChoice {
  readonly skip: boolean;
  readonly ttls: readonly number[];
}

/**
 * How a load behaves: a pause before it answers, whether it fails, and per
 * identity what its loader tells the cache, before the pause or (`late`)
 * after it. `by` numbers the operation, unique in a run.
 */
export interface LoadPlan {
  readonly by: number;
  readonly delayMs: number;
  readonly fail: boolean;
  readonly late: boolean;
  readonly choices: Readonly<Record<string, LoadChoice>>;
}

/** What a getEntry reported besides its value. */
export interface EntryReport {
  readonly source: string;
  readonly stale: boolean;
  readonly ageMs: number;
  readonly freshForMs: number;
  readonly stored: boolean;
}

/** The setters a loader's context hands one value (a getMany's, bound to its index). */
interface Setters {
  setTtlMs(ms: number): void;
  skip(): void;
}

/** An operation of the model. */
export type Op =
  | { readonly kind: "get"; readonly id: string; readonly tags: readonly string[]; readonly load: LoadPlan }
  | { readonly kind: "getEntry"; readonly id: string; readonly tags: readonly string[]; readonly load: LoadPlan }
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

/**
 * What an operation returned: values (get, getEntry, getMany, peek, set: the
 * value it wrote) and getEntry's report, or the error's message.
 */
export type Result =
  | { readonly ok: true; readonly values: readonly (Value | null)[]; readonly entry?: EntryReport }
  | { readonly ok: false; readonly error: string };

/** The message of a load the plan made fail. */
export const ORIGIN_FAILED = "origin failed (planned)";

const COUNTER = "model:versions";

/** The pipeline's ttlMs: the fresh window of a set value, and of a loaded one whose loader chose none. */
export const TTL_MS = 60_000;

/** A cache and its connections, rebuilt on a fresh namespace for each sequence. */
export class ModelProcess {
  readonly #redis: RedisClient;
  readonly #control: RedisClient;
  readonly #near: boolean;
  /** This process' number in the model: 1 for the one with a near tier. */
  readonly #p: 0 | 1;
  #cache: Cache<Value> | undefined;

  private constructor(redis: RedisClient, control: RedisClient, withNear: boolean) {
    this.#redis = redis;
    this.#control = control;
    this.#near = withNear;
    this.#p = withNear ? 1 : 0;
  }

  static async open(url: string, withNear: boolean): Promise<ModelProcess> {
    return new ModelProcess(await connect({ url, resp: 3 }), await connect({ url }), withNear);
  }

  /** Start over on `namespace` (a new cache: nothing of the previous sequence remains in memory). */
  async reset(namespace: string): Promise<void> {
    await this.#cache?.close();
    this.#cache = pipeline<Value>(
      { redis: this.#redis, ttlMs: TTL_MS, namespace },
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
      return { ok: true, ...await this.#run(op) };
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

  async #load(id: string, tags: readonly string[], plan: LoadPlan, ctx: Setters): Promise<Value> {
    const v = await this.#version();
    const choice = plan.choices[id] ?? { skip: false, ttls: [] };
    const choose = () => {
      for (const ms of choice.ttls) ctx.setTtlMs(ms);
      if (choice.skip) ctx.skip();
    };
    if (!plan.late) choose();
    if (plan.delayMs > 0) await new Promise((r) => setTimeout(r, plan.delayMs));
    if (plan.fail) throw new Error(ORIGIN_FAILED);
    if (plan.late) choose();
    return {
      id,
      v,
      tags,
      by: plan.by,
      p: this.#p,
      ...(choice.skip ? { skip: true as const } : {}),
      ...(choice.ttls.length > 0 ? { ttlMs: choice.ttls.at(-1)! } : {}),
    };
  }

  async #run(op: Op): Promise<{ values: (Value | null)[]; entry?: EntryReport }> {
    if (op.kind === "getEntry") {
      const r = await this.#cache!.getEntry(op.id, (ctx) => this.#load(op.id, op.tags, op.load, ctx), {
        tags: op.tags,
      });
      const entry = { source: r.source, stale: r.stale, ageMs: r.ageMs, freshForMs: r.freshForMs, stored: r.stored };
      return { values: [r.value], entry };
    }
    return { values: await this.#values(op) };
  }

  async #values(op: Exclude<Op, { kind: "getEntry" }>): Promise<(Value | null)[]> {
    const cache = this.#cache!;
    switch (op.kind) {
      case "get":
        return [await cache.get(op.id, (ctx) => this.#load(op.id, op.tags, op.load, ctx), { tags: op.tags })];
      case "getMany":
        return (await cache.getMany(
          op.ids,
          (missing, ctx) =>
            Promise.all(missing.map((id, i) =>
              this.#load(String(id), op.tags, op.load, {
                setTtlMs: (ms) => ctx.setTtlMs(i, ms),
                skip: () => ctx.skip(i),
              })
            )),
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
        await cache.warm(op.ids, (ctx) => this.#load(String(ctx.identity), op.tags, op.load, ctx), {
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
