/**
 * A cache built per request, as a Cloudflare Worker builds it (a new lazy
 * client and pipeline each time): what is not I/O (the server's clock
 * estimate, which scripts the server was sent) is kept per process, so a
 * later request's hit costs one write after the TCP connect, with no TIME
 * script.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connect } from "../../../resp/mod.ts";
import { pipeline, swr } from "../../../mod.ts";
import { untilPastFresh } from "../../support/strategies.ts";
import { deferred } from "../../support/wait.ts";
import { type Proxy, startProxy } from "../../support/proxy.ts";
import { useRedis } from "../../support/fixture.ts";
import type { RedisServer } from "../../support/redis_server.ts";

const PerRequest = suite<{ server: RedisServer; proxy: Proxy }>("a cache per request");
const db = useRedis(PerRequest, { clients: 1 });
PerRequest.before(async (ctx) => {
  ctx.proxy = await startProxy(ctx.server.port);
});
PerRequest.after(async (ctx) => {
  await ctx.proxy?.close();
});

/** One request of a Worker: a lazy client and a cache of its own, one get, both closed. */
async function request(url: string, resp: 2 | 3, ns: string): Promise<unknown> {
  const redis = await connect({ url, resp, lazyConnect: true });
  const cache = pipeline({ redis, namespace: ns, ttlMs: 60_000 });
  try {
    return await cache.get("k", () => "loaded");
  } finally {
    await cache.close();
    await redis.close();
  }
}

for (const resp of [2, 3] as const) {
  PerRequest(`RESP${resp}: a later request's hit is one write after the connect, with no TIME`, async ({ proxy }) => {
    const ns = db.ns();
    // The first request of the process loads, measures the clock and publishes.
    assert.is(await request(proxy.url, resp, ns), "loaded");
    const chunks = proxy.clientChunks.length;
    assert.is(await request(proxy.url, resp, ns), "loaded");
    // Everything the request sent: the first write carries the handshake
    // and the hit's reads (its one round trip), the rest is close().
    const sent = proxy.clientChunks.slice(chunks).map((c) => new TextDecoder().decode(c));
    assert.match(sent[0]!, /\r\nGET\r\n\$\d+\r\n[^\r]*:data\r\n/, `the hit's read in the first write: ${sent[0]}`);
    for (const write of sent) assert.not.match(write, /EVAL|TIME/, `no script on a hit: ${JSON.stringify(sent)}`);
  });
}

PerRequest(
  "pipeline({ waitUntil }) is handed a stale value's refresh, which completes after the call returned, and close()",
  async () => {
    const ns = db.ns();
    const handed: Promise<unknown>[] = [];
    const cache = pipeline(
      { redis: db.redis, namespace: ns, ttlMs: 50, waitUntil: (work) => handed.push(work) },
      swr({ staleMs: 60_000 }),
    );
    assert.is(await cache.get("k", () => "v1"), "v1");
    // Past the fresh window for the cache's estimate of the server's clock too, which may lag.
    await untilPastFresh(db.redis, cache, "k", 60_000);
    const held = deferred<string>();
    const before = handed.length;
    assert.is(await cache.get("k", () => held.promise), "v1", "served stale at once");
    assert.is(handed.length, before + 1, "the refresh was handed over");
    held.resolve("v2");
    await handed[before];
    assert.is(await db.redis.send(["EXISTS", cache.keys("k").data]), 1);
    assert.match(String(await db.redis.send(["GET", cache.keys("k").data])), /v2/);
    const closing = cache.close();
    assert.is(handed.length, before + 2, "close() was handed over");
    await closing;
    // Handed work never rejects, whatever it did.
    for (const work of handed) await work;
  },
);

PerRequest.run();
