/**
 * The same product API with Hono on Node (`@hono/node-server`).
 *
 *   npm run example:hono         # from a clone of herdless (REDIS_URL and PORT optional)
 *   curl http://127.0.0.1:3000/products/42
 *
 * In your own project: `npm install herdless hono @hono/node-server`, copy
 * this file, run it with `npx tsx hono.ts`. Under Deno or Bun, Hono needs no
 * adapter: serve `app.fetch` with `Deno.serve` or `Bun.serve`.
 *
 * @module
 */
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import process from "node:process";
import { cacheStatus, coalesce, connect, isTimeoutError, lease, pipeline, swr } from "herdless";

interface Product {
  id: number;
  name: string;
}

// The origin: stands in for your database or upstream API (a 100 ms query).
async function loadProduct(id: number): Promise<Product | undefined> {
  await new Promise((resolve) => setTimeout(resolve, 100));
  return id <= 1000 ? { id, name: `Product ${id}` } : undefined; // undefined: not found
}

const redis = await connect({ url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379", resp: 3 });
const products = pipeline<Product | undefined>(
  { redis, ttlMs: 60_000, negativeTtlMs: 10_000, namespace: "example-products" },
  swr({ staleMs: 30_000 }),
  coalesce(),
  lease(),
);

const app = new Hono();
app.get("/products/:id{[0-9]+}", async (c) => {
  const id = Number(c.req.param("id"));
  try {
    const entry = await products.getEntry(["product", id], () => loadProduct(id), { timeoutMs: 2_000 });
    // What the cache did (RFC 9211) and how old the value is, in whole seconds (RFC 9111).
    c.header("cache-status", cacheStatus(entry));
    c.header("age", String(Math.floor(entry.ageMs / 1000)));
    return entry.value === undefined ? c.notFound() : c.json(entry.value);
  } catch (error) {
    return c.body(null, isTimeoutError(error) ? 504 : 500);
  }
});

const server = serve(
  { fetch: app.fetch, port: Number(process.env.PORT ?? 3000), hostname: "127.0.0.1" },
  (info) => console.log(`listening on http://127.0.0.1:${info.port}`),
);

// Stop taking requests, let background refreshes finish, then close Redis.
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    server.close();
    void products.close().then(() => redis.close());
  });
}
