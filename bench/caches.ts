/**
 * The cache-level table: one adapter per cache, each configured the way its
 * own docs make it fastest, all answering `get(i)` for the same 1,000 keys
 * with the same ~120-byte JSON values. Every adapter first fills its keys
 * through its own `get(key, loader)` (the loader runs once per key there),
 * then checks one value, then only hits are measured: the worker fails if the
 * loader runs again.
 *
 * herdless rows use one RESP3 connection (`connect({ url, resp: 3 })`, as the
 * README's examples and `near()` need); `BENCH_HERDLESS_RESP=2` measures the
 * rows without `near()` over RESP2 instead.
 *
 * @module
 */
import process from "node:process";
import { pipeline, type PipelineOptions } from "../mod.ts";
import { connect, type RedisClient } from "../resp/mod.ts";
import { cacheValue } from "./item.ts";
import { CL, describeLayers, FULL, type Layer, NEAR, strategiesOf } from "./layers.ts";

/** The caches of the cache-level table, in the order they run and print. */
export const CACHES = [
  "raw-get",
  "raw-get-tracking",
  "cl",
  "full",
  "full-str",
  "near-cl",
  "near-cl-str",
  "near-full",
  "node-redis-csc",
  "bento-l1l2",
  "bento-l1",
  "bento-l2",
  "cachified",
] as const;
export type CacheName = (typeof CACHES)[number];

/** What each row is, for the table. */
export const CACHE_LABELS: Record<CacheName, string> = {
  "raw-get": 'herdless raw `send(["GET", key])` + JSON.parse',
  "raw-get-tracking": 'herdless raw `send(["GET", key])` + JSON.parse, CLIENT TRACKING on',
  cl: "herdless `pipeline(coalesce(), lease())`, README call",
  full: "herdless full pipeline, README call",
  "full-str": "herdless full pipeline, string id + loader built once, no options",
  "near-cl": "herdless `pipeline(near(), coalesce(), lease())`, README call",
  "near-cl-str": "herdless `pipeline(near(), coalesce(), lease())`, string id + loader built once, no options",
  "near-full": "herdless `near()` + full pipeline, README call",
  "node-redis-csc": "node-redis 5 `clientSideCache` (RESP3 tracking)",
  "bento-l1l2": "Bentocache 1.6, memory L1 + Redis L2 + bus",
  "bento-l1": "Bentocache 1.6, memory L1 only",
  "bento-l2": "Bentocache 1.6, Redis only (L2)",
  cachified: "cachified 5.6 over node-redis",
};

/** The herdless rows that need `near()` (and so client tracking). */
export const NEAR_CACHES: readonly CacheName[] = [
  "near-cl",
  "near-cl-str",
  "near-full",
];

/**
 * The herdless rows that call the cache the way the README and the example
 * servers do: a tuple identity, a loader closure and a `{ timeoutMs }`
 * options object, all built per call. The `-str` rows beside them reuse a
 * string identity and a loader built before the timed loop, and pass no options.
 */
export const README_CALL = 'get(["item", i], ({ signal }) => load(i, signal), { timeoutMs: 2_000 })';

/** Distinct keys read. */
export const CACHE_KEYS = 1_000;
/** Entries live this long: nothing expires during a run. */
export const CACHE_TTL_MS = 600_000;

/** One cache under test: `get(i)` hits key `i % CACHE_KEYS`. */
export interface BenchCache {
  get(i: number): Promise<unknown>;
  /** Loader calls so far. */
  loads(): number;
  /** What it is, as configured (printed once with the table). */
  config: string;
  close(): Promise<void>;
}

interface HerdlessCache {
  get(
    identity: string | readonly (string | number)[],
    loader: (ctx: { signal: AbortSignal }) => unknown,
    options?: { timeoutMs?: number },
  ): Promise<unknown>;
  set(
    identity: string,
    value: unknown,
    options?: { ttlMs?: number },
  ): Promise<void>;
  invalidate(identity: string): Promise<void>;
  stats(): Record<string, number>;
  close(): Promise<void>;
}

/**
 * Build a herdless pipeline over `redis`, turning a refusal at build time
 * (`near()` over a client without tracking) into "not available: reason".
 */
export function herdlessPipeline(
  redis: RedisClient,
  namespace: string,
  layers: readonly Layer[],
  extra: Partial<PipelineOptions<unknown>> = {},
): HerdlessCache {
  const s = strategiesOf(layers);
  try {
    return pipeline(
      { redis, ttlMs: CACHE_TTL_MS, namespace, ...extra },
      ...s,
    ) as unknown as HerdlessCache;
  } catch (error) {
    throw new Error(
      `not available: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`,
    );
  }
}

/**
 * Why `near()` cannot be measured against `url` (probed once by the parent,
 * so near rows say why instead of failing one worker at a time), or
 * undefined when it can.
 */
export async function nearUnavailable(
  url: string,
): Promise<string | undefined> {
  const redis = await connect({ url, resp: 3 });
  try {
    const cache = herdlessPipeline(redis, "bench:probe", [NEAR]);
    await cache.close();
    return undefined;
  } catch (error) {
    return (error instanceof Error ? error.message : String(error)).replace(
      /^not available: /,
      "",
    );
  } finally {
    await redis.close();
  }
}

/** The protocol of the herdless rows without `near()`: 3 unless `BENCH_HERDLESS_RESP=2`. */
export function herdlessResp(): 2 | 3 {
  return process.env.BENCH_HERDLESS_RESP === "2" ? 2 : 3;
}

const keyOf = (prefix: string) => Array.from({ length: CACHE_KEYS }, (_, i) => `${prefix}${i}`);
const FILL_AT_ONCE = 32;

/** Run `get` once per key to fill, `FILL_AT_ONCE` at a time, then check that key 7 reads back value 7. */
async function fill(c: BenchCache): Promise<BenchCache> {
  for (let i = 0; i < CACHE_KEYS; i += FILL_AT_ONCE) {
    const batch: Promise<unknown>[] = [];
    for (let j = i; j < Math.min(CACHE_KEYS, i + FILL_AT_ONCE); j++) {
      batch.push(c.get(j));
    }
    await Promise.all(batch);
  }
  const got = JSON.stringify(await c.get(7));
  const want = JSON.stringify(cacheValue(7));
  if (got !== want) {
    throw new Error(`value 7 reads back as ${got}, not ${want}`);
  }
  return c;
}

/** Open, configure and fill one cache. */
export async function openCache(
  name: CacheName,
  url: string,
): Promise<BenchCache> {
  const values = Array.from({ length: CACHE_KEYS }, (_, i) => cacheValue(i));
  let loads = 0;
  const loaderFor = (i: number) => () => {
    loads++;
    return values[i]!;
  };
  const loaders = values.map((_, i) => loaderFor(i));
  const counted = { loads: () => loads };

  switch (name) {
    case "raw-get":
    case "raw-get-tracking": {
      // The floor every cache is measured against: one GET of the plain JSON, one parse. With tracking on, the
      // server remembers every key read, as it does for a pipeline on a RESP3 client: that cost is on both sides.
      const tracked = name === "raw-get-tracking";
      const resp = tracked ? 3 : herdlessResp();
      const redis = await connect({ url, resp });
      if (tracked) await redis.track({ invalidate() {}, reset() {} });
      const keys = keyOf(tracked ? "bench:cache:rawt:" : "bench:cache:raw:");
      return await fill({
        ...counted,
        config: `connect({ resp: ${resp} });${
          tracked ? " track() (CLIENT TRACKING ON);" : ""
        } send(["GET", key]) then JSON.parse; a miss loads and SETs PX`,
        async get(i) {
          const k = i % CACHE_KEYS;
          const raw = await redis.send(["GET", keys[k]!]);
          if (raw !== null) return JSON.parse(raw as string);
          const v = loaders[k]!();
          await redis.send([
            "SET",
            keys[k]!,
            JSON.stringify(v),
            "PX",
            CACHE_TTL_MS,
          ]);
          return v;
        },
        close: () => redis.close(),
      });
    }
    case "cl":
    case "full":
    case "full-str":
    case "near-cl":
    case "near-cl-str":
    case "near-full": {
      const isNear = name.startsWith("near-");
      const strings = name.endsWith("-str");
      const layers = name.includes("cl") ? CL : FULL;
      const all = isNear ? [NEAR, ...layers] : layers;
      const resp = isNear ? 3 : herdlessResp();
      const redis = await connect({ url, resp });
      let cache: HerdlessCache;
      try {
        cache = herdlessPipeline(redis, `bench:cache:${name}`, all);
      } catch (error) {
        await redis.close();
        throw error;
      }
      const ids = keyOf("item:");
      // The README's call builds its tuple, closure and options per call; the
      // string rows reuse ids and loaders built before the clock starts.
      const get = strings
        ? (i: number) => {
          const k = i % CACHE_KEYS;
          return cache.get(ids[k]!, loaders[k]!);
        }
        : (i: number) => {
          const k = i % CACHE_KEYS;
          return cache.get(["item", k], ({ signal }) => {
            signal.throwIfAborted();
            return loaders[k]!();
          }, { timeoutMs: 2_000 });
        };
      const c = await fill({
        ...counted,
        config: `connect({ resp: ${resp} }); pipeline({ ttlMs: ${CACHE_TTL_MS} }, ${describeLayers(all)}); ${
          strings ? 'get(ids[i] ("item:<i>", built once), loaders[i] (built once))' : README_CALL
        }`,
        get,
        close: async () => {
          await cache.close();
          await redis.close();
        },
      });
      if (isNear) {
        // Reads after the fill are what put entries near; one more pass must be all near hits.
        for (let i = 0; i < CACHE_KEYS; i++) await c.get(i);
        const before = cache.stats().nearHits ?? 0;
        for (let i = 0; i < CACHE_KEYS; i++) await c.get(i);
        const nearHits = (cache.stats().nearHits ?? 0) - before;
        if (nearHits < CACHE_KEYS) {
          throw new Error(
            `near() served ${nearHits} of ${CACHE_KEYS} warm reads from memory: not a near-hit path`,
          );
        }
      }
      return c;
    }
    case "node-redis-csc":
    case "cachified": {
      const { createClient } = await import("redis");
      const csc = name === "node-redis-csc";
      // clientSideCache: unlimited entries, no local TTL, FIFO (LRU re-inserts into its Map on every hit),
      // no stats: the cheapest hit its options allow. Only RESP3 can carry the invalidations.
      const options = csc
        ? {
          url,
          RESP: 3 as const,
          clientSideCache: {
            ttl: 0,
            maxEntries: 0,
            evictPolicy: "FIFO" as const,
            recordStats: false,
          },
        }
        : { url };
      const client = createClient(options);
      client.on("error", (error: unknown) => console.error(`${name}:`, error));
      await client.connect();
      if (csc) {
        const keys = keyOf("bench:cache:csc:");
        return await fill({
          ...counted,
          config:
            'createClient({ RESP: 3, clientSideCache: { ttl: 0, maxEntries: 0, evictPolicy: "FIFO", recordStats: false } }); get(key) then JSON.parse; a miss loads and SETs PX',
          async get(i) {
            const k = i % CACHE_KEYS;
            const raw = await client.get(keys[k]!);
            if (raw !== null) return JSON.parse(raw as string);
            const v = loaders[k]!();
            await client.set(keys[k]!, JSON.stringify(v), { PX: CACHE_TTL_MS });
            return v;
          },
          close: () => client.quit().then(() => undefined),
        });
      }
      const { cachified } = await import("@epic-web/cachified");
      const { redisCacheAdapter } = await import("cachified-redis-adapter");
      const adapter = redisCacheAdapter(client as never);
      const keys = keyOf("bench:cache:cachified:");
      return await fill({
        ...counted,
        config:
          "cachified({ cache: redisCacheAdapter(createClient()), key, ttl: 600000, getFreshValue }) (the adapter its README lists for node-redis: GET + JSON.parse of { metadata, value })",
        get(i) {
          const k = i % CACHE_KEYS;
          return cachified({
            cache: adapter,
            key: keys[k]!,
            ttl: CACHE_TTL_MS,
            getFreshValue: loaders[k]!,
          });
        },
        close: () => client.quit().then(() => undefined),
      });
    }
    case "bento-l1": {
      const { BentoCache, bentostore } = await import("bentocache");
      const { memoryDriver } = await import("bentocache/drivers/memory");
      const bento = new BentoCache({
        default: "cache",
        stores: {
          cache: bentostore().useL1Layer(
            memoryDriver({ maxItems: 10_000, serialize: false }),
          ),
        },
      });
      const cache = bento.use("cache");
      const keys = keyOf("item:");
      return await fill({
        ...counted,
        config:
          'new BentoCache({ stores: { cache: bentostore().useL1Layer(memoryDriver({ maxItems: 10000, serialize: false })) } }).use("cache").getOrSet({ key, factory, ttl: 600000 })',
        get(i) {
          const k = i % CACHE_KEYS;
          return cache.getOrSet({
            key: keys[k]!,
            factory: loaders[k]!,
            ttl: CACHE_TTL_MS,
          });
        },
        close: () => bento.disconnectAll(),
      });
    }
    case "bento-l1l2":
    case "bento-l2": {
      const { BentoCache, bentostore } = await import("bentocache");
      const { memoryDriver } = await import("bentocache/drivers/memory");
      const { redisDriver, redisBusDriver } = await import(
        "bentocache/drivers/redis"
      );
      const { Redis } = await import("ioredis");
      const u = new URL(url);
      // What REDIS_URL may carry (ioredis takes options, the bus driver too): host, port, credentials, database.
      const connection = {
        host: u.hostname,
        port: Number(u.port || 6379),
        ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
        ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
        db: Number(u.pathname.slice(1) || 0),
      };
      // ioredis' auto-pipelining (its docs: for many concurrent commands) sends the commands of a tick in one
      // write; without it every GET is its own write. BENCH_BENTO_AUTOPIPELINING=0 measures without.
      const autoPipelining = process.env.BENCH_BENTO_AUTOPIPELINING !== "0";
      const ioredis = new Redis({
        ...connection,
        enableAutoPipelining: autoPipelining,
        lazyConnect: true,
      });
      await ioredis.connect();
      const tiered = name === "bento-l1l2";
      let store = bentostore();
      if (tiered) {
        store = store.useL1Layer(
          memoryDriver({ maxItems: 10_000, serialize: false }),
        );
      }
      store = store.useL2Layer(
        redisDriver({ connection: ioredis, prefix: `bench:cache:${name}` }),
      );
      if (tiered) store = store.useBus(redisBusDriver({ connection }));
      const bento = new BentoCache({
        default: "cache",
        stores: { cache: store },
      });
      const cache = bento.use("cache");
      // 1.6.1 fails reading an L2 entry back into an L1 built with serialize: false ("Cannot read properties of
      // undefined (reading 'deserialize')", https://github.com/Julien-R44/bentocache/issues/111): start from an empty
      // L2, so the fill goes through the factory and every measured hit is an L1 hit, its fastest path.
      if (tiered) await cache.clear();
      const keys = keyOf("item:");
      return await fill({
        ...counted,
        config: `new BentoCache({ stores: { cache: bentostore()${
          tiered ? ".useL1Layer(memoryDriver({ maxItems: 10000, serialize: false }))" : ""
        }.useL2Layer(redisDriver({ connection: new Redis({ enableAutoPipelining: ${autoPipelining} }) }))${
          tiered ? ".useBus(redisBusDriver({ connection }))" : ""
        } } }).use("cache").getOrSet({ key, factory, ttl: 600000 })${
          tiered
            ? "; L2 cleared before filling (a Bentocache bug: an L2 entry cannot refill a serialize: false L1)"
            : ""
        }`,
        get(i) {
          const k = i % CACHE_KEYS;
          return cache.getOrSet({
            key: keys[k]!,
            factory: loaders[k]!,
            ttl: CACHE_TTL_MS,
          });
        },
        close: async () => {
          await bento.disconnectAll();
          ioredis.disconnect();
        },
      });
    }
  }
}
