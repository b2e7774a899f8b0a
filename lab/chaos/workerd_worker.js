// The chaos run's Worker (run under workerd by workerd_driver.ts): what a
// user writes, importing the built package. A Worker's sockets belong to the
// request that opened them, so every request connects (lazily, RESP2, as the
// docs/workers.md advises), builds the full pipeline, gets
// one key and hands the close to ctx.waitUntil. The cache server is reached
// through the run's fault proxy, in the proxy workers' namespace: the Worker
// shares their entries and lives through every fault.
//
//   /get?key=k12   {"k":"k12","v":<version>} or status 500 {"error":{name, code, message}}
//
// The origin is the run's: one HINCRBY on the counter server gives the
// version, one RPUSH logs the call, then it waits like a database.
import { coalesce, connect, jitter, lease, limit, pipeline, swr, xfetch } from "herdless";

const CALLS_KEY = "chaos:calls";
const LOG_KEY = "chaos:log";

function origin(env, s, key) {
  return async () => {
    const counter = await connect({ url: env.COUNTER_URL, lazyConnect: true, name: "chaos-cf-origin" });
    try {
      // Inside a Worker, Date.now() stands still while the request computes: it moves on I/O, as here.
      const at = Date.now();
      const [v] = await Promise.all([
        counter.send(["HINCRBY", CALLS_KEY, key, 1]),
        counter.send(["RPUSH", LOG_KEY, `${key} ${at}`]),
      ]);
      await new Promise((resolve) => setTimeout(resolve, s.originMs));
      // w names the loader in a worker's "backwards" note, as origin.ts's values do.
      return { k: key, v: Number(v), w: "workerd", at, pad: "x".repeat(s.valueBytes) };
    } finally {
      await counter.close();
    }
  };
}

export default {
  async fetch(request, env, ctx) {
    const s = JSON.parse(env.SETTINGS);
    const key = new URL(request.url).searchParams.get("key") ?? "k0";
    // Named apart from the proxy workers' chaos-w<id>: the run counts those as its four worker connections.
    const redis = await connect({ url: env.CACHE_URL, lazyConnect: true, name: "chaos-cf" });
    // Every request is its own process as far as ordering goes: across processes, versions only move forward if no
    // value is served that Redis did not store (docs/production.md, "Value order"), so a write Redis
    // refuses fails the get instead of serving the origin's value uncached.
    const cache = pipeline(
      { redis, ttlMs: s.ttlMs, namespace: "chaos", failOpen: false, waitUntil: (work) => ctx.waitUntil(work) },
      swr({ staleMs: s.staleMs }),
      xfetch(),
      coalesce(),
      lease({ leaseMs: s.leaseMs, waitMs: s.waitMs }),
      jitter({ spreadMs: s.spreadMs }),
      ...(s.limit === null ? [] : [limit(s.limit)]),
    );
    try {
      const value = await cache.get(["chaos", key], origin(env, s, key), { timeoutMs: s.getTimeoutMs });
      return Response.json({ k: value.k, v: value.v });
    } catch (error) {
      return Response.json(
        { error: { name: error?.name, code: error?.code, message: String(error?.message ?? error) } },
        { status: 500 },
      );
    } finally {
      ctx.waitUntil(cache.close().then(() => redis.close()));
    }
  },
};
