// The Worker the workerd tests run: what a user writes, importing the built
// package. It connects (lazily) and builds its pipeline per request, since
// sockets belong to the request that opened them, and hands the work that
// outlives the response to ctx.waitUntil.
//
//   /modules             how many modules of the package the Worker imported
//   /get?ns=&key=        coalesce() + lease(); the loader asks env.ORIGIN (a
//                        server of the test's) for the value, so the test
//                        counts origin calls across isolates and processes
//   /swr?ns=&key=&ttl=   swr({ staleMs: 60000 }) over a fresh window of ttl ms
//   &redis=URL           connect there instead of env.REDIS_URL
//   /inflate?ns=&key=    compressed("bytes", { maxInflatedBytes: 4096 }): the
//                        value's length and the decode errors of the get
import { coalesce, compressed, connect, lease, pipeline, swr } from "herdless";

function failed(error) {
  return Response.json({ error: `${error?.name}: ${error?.message}` }, {
    status: 500,
  });
}

export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    if (url.pathname === "/modules") {
      return Response.json({ modules: globalThis.herdlessModules });
    }
    if (url.pathname === "/resp") {
      // The protocol connect() picks here when none is given.
      const redis = await connect({ url: env.REDIS_URL, lazyConnect: true });
      const resp = redis.resp;
      await redis.close();
      return Response.json({ resp });
    }
    const ns = url.searchParams.get("ns") ?? "wd";
    const key = url.searchParams.get("key") ?? "k";
    const redis = await connect({
      url: url.searchParams.get("redis") ?? env.REDIS_URL,
      lazyConnect: true,
      connectTimeoutMs: 10_000,
      commandTimeoutMs: 10_000,
    });
    if (url.pathname === "/inflate") {
      const errors = [];
      const cache = pipeline({
        redis,
        namespace: ns,
        ttlMs: 60_000,
        codec: compressed("bytes", { minBytes: 16, maxInflatedBytes: 4096 }),
        onEvent: (event) =>
          event.type === "decode-error" &&
          errors.push(`${event.error.name}: ${event.error.message}`),
      });
      try {
        // Connected first: a lazy client's first command, queued while it
        // connects, comes back as text even with buffers: true.
        await redis.send(["PING"]);
        const value = await cache.get(key, () => new Uint8Array([7]));
        return Response.json({ length: value.length, errors });
      } catch (error) {
        return failed(error);
      } finally {
        ctx.waitUntil(cache.close().then(() => redis.close()));
      }
    }
    const strategies = url.pathname === "/swr"
      ? [swr({ staleMs: 60_000 })]
      : [coalesce(), lease({ leaseMs: 30_000, waitMs: 30_000 })];
    const cache = pipeline(
      {
        redis,
        namespace: ns,
        ttlMs: Number(url.searchParams.get("ttl") ?? 60_000),
        waitUntil: (work) => ctx.waitUntil(work),
        // A waiter tells the test it waits, so the test can hold the origin until every one does.
        onEvent: (event) => {
          if (event.type === "wait") {
            ctx.waitUntil(fetch(`${env.ORIGIN}/waiting?ns=${ns}`));
          }
        },
      },
      ...strategies,
    );
    try {
      const value = await cache.get(key, async () => {
        const response = await fetch(`${env.ORIGIN}/load?ns=${ns}&key=${key}`);
        return await response.json();
      });
      return Response.json({ value });
    } catch (error) {
      return failed(error);
    } finally {
      // What a Worker should write. /swr leaves its close to the cache's own
      // waitUntil (close() hands itself over), so that the test sees the
      // refresh kept alive by that hand-over alone.
      if (url.pathname === "/swr") void cache.close().then(() => redis.close());
      else ctx.waitUntil(cache.close().then(() => redis.close()));
    }
  },
};
