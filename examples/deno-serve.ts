/**
 * The same product API on `Deno.serve`.
 *
 *   deno task example            # from a clone of herdless (REDIS_URL and PORT optional)
 *   curl http://127.0.0.1:8000/products/42
 *
 * In your own project: `deno add jsr:@herdless/herdless`, copy this file, and
 * run it with `deno run --allow-net --allow-env deno-serve.ts`.
 *
 * @module
 */
import { cacheStatus, coalesce, connect, isTimeoutError, lease, pipeline, swr } from "@herdless/herdless";

interface Product {
  id: number;
  name: string;
}

// The origin: stands in for your database or upstream API (a 100 ms query).
async function loadProduct(id: number): Promise<Product | undefined> {
  await new Promise((resolve) => setTimeout(resolve, 100));
  return id <= 1000 ? { id, name: `Product ${id}` } : undefined; // undefined: not found
}

const redis = await connect({ url: Deno.env.get("REDIS_URL") ?? "redis://127.0.0.1:6379", resp: 3 });
const products = pipeline<Product | undefined>(
  { redis, ttlMs: 60_000, negativeTtlMs: 10_000, namespace: "example-products" },
  swr({ staleMs: 30_000 }),
  coalesce(),
  lease(),
);

const server = Deno.serve({
  hostname: "127.0.0.1",
  port: Number(Deno.env.get("PORT") ?? 8000),
  onListen: ({ port }) => console.log(`listening on http://127.0.0.1:${port}`),
}, async (req) => {
  const id = /^\/products\/(\d+)$/.exec(new URL(req.url).pathname)?.[1];
  if (req.method !== "GET" || id === undefined) return new Response(null, { status: 404 });
  try {
    const entry = await products.getEntry(["product", Number(id)], () => loadProduct(Number(id)), { timeoutMs: 2_000 });
    // What the cache did (RFC 9211) and how old the value is, in whole seconds (RFC 9111).
    const headers = { "cache-status": cacheStatus(entry), age: String(Math.floor(entry.ageMs / 1000)) };
    return entry.value === undefined
      ? new Response(null, { status: 404, headers })
      : Response.json(entry.value, { headers });
  } catch (error) {
    return new Response(null, { status: isTimeoutError(error) ? 504 : 500 });
  }
});

// Stop taking requests, let background refreshes finish, then close Redis.
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  Deno.addSignalListener(signal, async () => {
    await server.shutdown();
    await products.close();
    await redis.close();
    Deno.exit(0);
  });
}
