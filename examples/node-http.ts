/**
 * A product API on `node:http` with herdless in front of a slow origin.
 *
 *   npm run example              # from a clone of herdless (REDIS_URL and PORT optional)
 *   curl http://127.0.0.1:3000/products/42
 *
 * In your own project: `npm install herdless`, copy this file, run it with
 * `node --experimental-strip-types node-http.ts` (Node >= 22.6) or `npx tsx node-http.ts`.
 *
 * @module
 */
import { createServer } from "node:http";
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

const server = createServer(async (req, res) => {
  const id = /^\/products\/(\d+)$/.exec(req.url ?? "")?.[1];
  if (req.method !== "GET" || id === undefined) {
    res.writeHead(404).end();
    return;
  }
  try {
    const entry = await products.getEntry(["product", Number(id)], () => loadProduct(Number(id)), { timeoutMs: 2_000 });
    // What the cache did (RFC 9211) and how old the value is, in whole seconds (RFC 9111).
    const headers = { "cache-status": cacheStatus(entry), age: String(Math.floor(entry.ageMs / 1000)) };
    if (entry.value === undefined) res.writeHead(404, headers).end();
    else res.writeHead(200, { ...headers, "content-type": "application/json" }).end(JSON.stringify(entry.value));
  } catch (error) {
    res.writeHead(isTimeoutError(error) ? 504 : 500).end();
  }
});

server.listen(Number(process.env.PORT ?? 3000), "127.0.0.1", () => {
  const address = server.address();
  console.log(`listening on http://127.0.0.1:${typeof address === "object" ? address?.port : address}`);
});

// Stop taking requests, let background refreshes finish, then close Redis.
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    server.close();
    void products.close().then(() => redis.close());
  });
}
