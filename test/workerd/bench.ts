/**
 * `npm run bench:workerd`: a cached hit inside a Cloudflare Worker under
 * workerd, the way a Worker runs it (connect with lazyConnect, one get of a
 * cached value, close, per request), against a local redis-server behind a
 * counting proxy: round trips (client writes) and Redis commands per
 * request, for the first request of an isolate and for later ones, and
 * sequential requests per second (workerd's HTTP dispatch included).
 *
 *   node --import tsx test/workerd/bench.ts [--requests 300] [--resp 2|3]
 *
 * @module
 */
import process from "node:process";
import { startRedis } from "../support/redis_server.ts";
import { startProxy } from "../support/proxy.ts";
import { startOrigin } from "./_origin.ts";
import { startWorkerd } from "./_workerd.ts";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const requests = arg("--requests", 300);
const resp = arg("--resp", 2);

const worker = `
import { connect, pipeline } from "herdless";
export default {
  async fetch(request, env, ctx) {
    const redis = await connect({ url: env.REDIS_URL, resp: ${resp}, lazyConnect: true });
    const cache = pipeline({ redis, namespace: "bench", ttlMs: 3_600_000, waitUntil: (w) => ctx.waitUntil(w) });
    try {
      return Response.json(await cache.get("hit", () => ({ value: "cached" })));
    } finally {
      ctx.waitUntil(cache.close().then(() => redis.close()));
    }
  },
};`;

function commands(info: string): number {
  return Number(/total_commands_processed:(\d+)/.exec(info)?.[1] ?? 0);
}

const server = await startRedis();
const proxy = await startProxy(server.port);
const origin = await startOrigin();
// The value is cached by a first workerd, whose isolate is then gone.
const seed = await startWorkerd({
  worker,
  bindings: { REDIS_URL: proxy.url, ORIGIN: origin.url },
});
await seed.fetch("/");
await seed.dispose();
const workerd = await startWorkerd({
  worker,
  bindings: { REDIS_URL: proxy.url, ORIGIN: origin.url },
});
try {
  const measure = async (n: number) => {
    const chunks = proxy.clientChunks.length;
    const before = commands(server.cli("INFO", "stats"));
    const started = performance.now();
    for (let i = 0; i < n; i++) {
      const r = await workerd.fetch("/");
      if (r.status !== 200) {
        throw new Error(`request failed: ${JSON.stringify(r.body)}`);
      }
    }
    const ms = performance.now() - started;
    // INFO itself is one command.
    const cmds = commands(server.cli("INFO", "stats")) - before - 1;
    return {
      perSecond: (n * 1000) / ms,
      writes: (proxy.clientChunks.length - chunks) / n,
      commands: cmds / n,
      ms,
    };
  };
  const first = await measure(1);
  await measure(20); // warm-up
  const later = await measure(requests);
  console.log(
    `workerd, RESP${resp}, connect({ lazyConnect }) + cached get + close per request`,
  );
  console.log(
    `first request of an isolate: ${
      first.ms.toFixed(1)
    } ms, ${first.writes} client writes (round trips), ${first.commands} Redis commands`,
  );
  console.log(
    `later requests (${requests} sequential): ${later.perSecond.toFixed(0)} requests/s, ${
      later.writes.toFixed(2)
    } client writes (round trips) and ${later.commands.toFixed(2)} Redis commands per request`,
  );
} finally {
  await workerd.dispose();
  await origin.close();
  await proxy.close();
  await server.stop();
}
