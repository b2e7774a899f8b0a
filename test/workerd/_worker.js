// The Worker the workerd tests run: what a user writes, importing the built
// package. It connects and builds its pipeline per request (sockets belong to
// the request that opened them) and hands the close to ctx.waitUntil.
//
//   /modules        how many modules of the package the Worker imported
//   /get?ns=&key=   coalesce() + lease(); the loader asks env.ORIGIN (a
//                   server of the test's) for the value, so the test counts
//                   origin calls across isolates and processes
import { coalesce, connect, lease, pipeline } from "herdless";

function fail(error) {
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
    const ns = url.searchParams.get("ns") ?? "wd";
    const key = url.searchParams.get("key") ?? "k";
    let redis;
    try {
      redis = await connect({
        url: env.REDIS_URL,
        connectTimeoutMs: 2000,
        commandTimeoutMs: 5000,
      });
    } catch (error) {
      return fail(error);
    }
    const cache = pipeline(
      {
        redis,
        namespace: ns,
        ttlMs: 60_000,
        // A waiter tells the test it waits, so the test can hold the origin until every one does.
        onEvent: (event) => {
          if (event.type === "wait") {
            ctx.waitUntil(fetch(`${env.ORIGIN}/waiting?ns=${ns}`));
          }
        },
      },
      coalesce(),
      lease({ leaseMs: 30_000, waitMs: 30_000 }),
    );
    try {
      const value = await cache.get(key, async () => {
        const response = await fetch(`${env.ORIGIN}/load?ns=${ns}&key=${key}`);
        return await response.json();
      });
      return Response.json({ value });
    } catch (error) {
      return fail(error);
    } finally {
      ctx.waitUntil(cache.close().then(() => redis.close()));
    }
  },
};
