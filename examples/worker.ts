/**
 * A product API as a Cloudflare Worker, with herdless in front of a slow
 * origin. Needs the `nodejs_compat` flag (wrangler.toml beside this file).
 *
 *   npm run example:worker      # from a clone of herdless: runs it locally under workerd
 *                               # (the miniflare package), against REDIS_URL (PORT optional)
 *   curl http://127.0.0.1:8787/products/42
 *
 * In your own project: `npm install herdless`, copy this file and
 * wrangler.toml, then `npx wrangler dev` or `npx wrangler deploy` (set
 * REDIS_URL with `npx wrangler secret put REDIS_URL`).
 *
 * @module
 */
import { cacheStatus, coalesce, connect, isTimeoutError, lease, pipeline, swr } from "herdless";

interface Env {
  REDIS_URL: string;
}

/** What this Worker uses of its `ctx` (`ExecutionContext` in @cloudflare/workers-types). */
interface Context {
  waitUntil(work: Promise<unknown>): void;
}

interface Product {
  id: number;
  name: string;
}

// The origin: stands in for your database or upstream API (a 100 ms query).
async function loadProduct(id: number): Promise<Product | undefined> {
  await new Promise((resolve) => setTimeout(resolve, 100));
  return id <= 1000 ? { id, name: `Product ${id}` } : undefined; // undefined: not found
}

export default {
  async fetch(request: Request, env: Env, ctx: Context): Promise<Response> {
    const id = /^\/products\/(\d+)$/.exec(new URL(request.url).pathname)?.[1];
    if (request.method !== "GET" || id === undefined) return new Response(null, { status: 404 });
    // Per request: a socket belongs to the request that opened it. lazyConnect
    // sends the handshake with the first read, in one round trip.
    const redis = await connect({ url: env.REDIS_URL, lazyConnect: true });
    const products = pipeline<Product | undefined>(
      {
        redis,
        ttlMs: 60_000,
        negativeTtlMs: 10_000,
        namespace: "example-products",
        // A stale value's refresh, a lease release, a late publish: after the response.
        waitUntil: (work) => ctx.waitUntil(work),
      },
      swr({ staleMs: 30_000 }),
      coalesce(),
      lease(),
    );
    try {
      const entry = await products.getEntry(["product", Number(id)], () => loadProduct(Number(id)), {
        timeoutMs: 2_000,
      });
      // What the cache did (RFC 9211) and how old the value is, in whole seconds (RFC 9111).
      const headers = { "cache-status": cacheStatus(entry), age: String(Math.floor(entry.ageMs / 1000)) };
      return entry.value === undefined
        ? new Response(null, { status: 404, headers })
        : Response.json(entry.value, { headers });
    } catch (error) {
      return new Response(null, { status: isTimeoutError(error) ? 504 : 500 });
    } finally {
      ctx.waitUntil(products.close().then(() => redis.close()));
    }
  },
};
