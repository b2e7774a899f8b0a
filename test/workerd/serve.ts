/**
 * `npm run example:worker`: serve a Worker (examples/worker.ts) locally
 * under workerd, the runtime of Cloudflare Workers, through the miniflare
 * package pinned in test/workerd/. miniflare does not read wrangler.toml;
 * this reads its compatibility date, flags and [vars] from the one beside
 * the Worker. REDIS_URL and PORT (default 8787) come from the environment.
 *
 *   node --import tsx test/workerd/serve.ts examples/worker.ts
 *
 * @module
 */
import { dirname, join, resolve } from "node:path";
import process from "node:process";
import { serveWorker } from "./_workerd.ts";

const file = resolve(process.argv[2] ?? "examples/worker.ts");
const bindings: Record<string, string> = {};
if (process.env.REDIS_URL) bindings.REDIS_URL = process.env.REDIS_URL;
const served = await serveWorker(file, join(dirname(file), "wrangler.toml"), {
  port: Number(process.env.PORT ?? 8787),
  bindings,
});
console.log(`listening on ${served.url}`);
// Ahead of miniflare's own signal hook, which re-raises the signal (exit
// code 143) when it counts no listener but its own: exit cleanly at once;
// miniflare's exit hook stops workerd.
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.prependListener(signal, () => process.exit(0));
}
