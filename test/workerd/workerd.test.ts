/**
 * herdless inside a Cloudflare Worker, under the real workerd runtime with
 * `nodejs_compat`, importing the built package, against a redis-server of
 * the suite's own. The driver is Node (miniflare is a Node package): under
 * Bun and Deno these suites are skipped, since the runtime under test is
 * workerd either way.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { deflateRawSync } from "node:zlib";
import { compressed, pipeline } from "../../mod.ts";
import { decodeEnvelope } from "../../strategies/pipeline/read/envelope.ts";
import { useRedis } from "../support/fixture.ts";
import { startRedis } from "../support/redis_server.ts";
import { untilPastFresh } from "../support/strategies.ts";
import { until, within } from "../support/wait.ts";
import { type Origin, startOrigin } from "./_origin.ts";
import { canDrive, publishedModules, startWorkerd, type Workerd } from "./_workerd.ts";

const Workers = suite<{ origin: Origin; workerd: Workerd }>(
  "herdless under workerd",
);
const db = useRedis(Workers, { clients: 1 });

Workers.before(async (ctx) => {
  ctx.origin = await startOrigin();
  ctx.workerd = await startWorkerd({
    bindings: { REDIS_URL: db.url, ORIGIN: ctx.origin.url },
  });
});

Workers.after(async (ctx) => {
  await ctx.workerd?.dispose();
  await ctx.origin?.close();
});

Workers(
  "every published module imports under workerd: nothing at module scope that workerd refuses",
  async ({ workerd }) => {
    const count = publishedModules().length;
    assert.ok(count > 50, `found ${count} modules in dist/`);
    assert.equal(await workerd.fetch("/modules"), {
      status: 200,
      body: { modules: count },
    });
  },
);

Workers(
  "connect() defaults to RESP2 in a Worker (RESP3 elsewhere)",
  async ({ workerd }) => {
    assert.equal(await workerd.fetch("/resp"), {
      status: 200,
      body: { resp: 2 },
    });
  },
);

Workers(
  "a get loads once, later requests hit; concurrent requests of one isolate each use their own socket",
  async ({ origin, workerd }) => {
    const ns = db.ns();
    const first = await workerd.fetch(`/get?ns=${ns}&key=a`);
    assert.equal(first, {
      status: 200,
      body: { value: { key: "a", load: 1 } },
    });
    // Three rounds of 25 at once in the one isolate: none may touch another
    // request's socket, signal or promise ("Cannot perform I/O on behalf of a
    // different request" would be a 500 here).
    for (let round = 0; round < 3; round++) {
      const responses = await Promise.all(
        Array.from({ length: 25 }, () => workerd.fetch(`/get?ns=${ns}&key=a`)),
      );
      for (const response of responses) {
        assert.equal(response, {
          status: 200,
          body: { value: { key: "a", load: 1 } },
        });
      }
    }
    assert.is(origin.loads(ns), 1);
  },
);

Workers(
  "a cold burst of 25 concurrent requests into each of 2 workerd processes makes 1 origin call",
  async ({ origin, workerd }) => {
    const ns = db.ns();
    const other = await startWorkerd({
      bindings: { REDIS_URL: db.url, ORIGIN: origin.url },
    });
    try {
      const release = origin.hold(ns);
      let answered = 0;
      const responses = Promise.all(
        [workerd, other].flatMap((w) =>
          Array.from(
            { length: 25 },
            () => w.fetch(`/get?ns=${ns}&key=cold`).finally(() => answered++),
          )
        ),
      );
      // The load is held until every other request waits on its lease (a
      // request that failed instead never waits: its response says why).
      await until(
        () => origin.loads(ns) >= 1 && origin.waiting(ns) + answered >= 49,
        60_000,
      );
      release();
      for (const response of await responses) {
        assert.equal(response, {
          status: 200,
          body: { value: { key: "cold", load: 1 } },
        });
      }
      assert.is(origin.loads(ns), 1);
    } finally {
      await other.dispose();
    }
  },
);

Workers(
  "a stale value is answered at once and its refresh completes through waitUntil after the response",
  async ({ origin, workerd }) => {
    const ns = db.ns();
    const path = `/swr?ns=${ns}&key=s&ttl=50`;
    assert.equal(await workerd.fetch(path), {
      status: 200,
      body: { value: { key: "s", load: 1 } },
    });
    // Past the fresh window for the isolate's estimate of the server's clock too, which may lag.
    const keys = pipeline({ redis: db.redis, namespace: ns, ttlMs: 1 });
    await untilPastFresh(db.redis, keys, "s", 60_000);
    const key = keys.keys("s").data;
    // The refresh's load is held: the response cannot be waiting for it.
    const release = origin.hold(ns);
    assert.equal(await workerd.fetch(path), {
      status: 200,
      body: { value: { key: "s", load: 1 } },
    });
    await within(origin.reach(ns, "loads", 2), "the refresh's load");
    release();
    // The request is over; only waitUntil keeps its refresh going to the publish.
    await until(async () => /"load":2/.test(String(await db.redis.send(["GET", key]))));
    assert.is(origin.loads(ns), 2);
  },
);

Workers(
  "Redis stopped: an error response in bounded time, and no origin call",
  async ({ origin, workerd }) => {
    const ns = db.ns();
    const gone = await startRedis();
    const url = gone.url;
    await gone.stop();
    const response = await workerd.fetch(
      `/get?ns=${ns}&key=k&redis=${encodeURIComponent(url)}`,
    );
    assert.is(response.status, 500);
    assert.match(
      response.body.error,
      /^ConnectionError: Cannot connect to redis:\/\/127\.0\.0\.1:\d+/,
    );
    assert.is(origin.loads(ns), 0);
  },
);

Workers(
  "compressed(): a stored value inflating past maxInflatedBytes is a decode error naming the cap (workerd's RangeError has no code)",
  async ({ workerd }) => {
    const ns = db.ns();
    // A genuine compressed entry, then its payload swapped for one inflating one byte past the cap.
    const writer = pipeline<Uint8Array>({
      redis: db.redis,
      namespace: ns,
      ttlMs: 60_000,
      codec: compressed("bytes", { minBytes: 16, maxInflatedBytes: 4096 }),
    });
    await writer.get("z", () => new Uint8Array(1000));
    const key = writer.keys("z").data;
    await writer.close();
    const raw = (await db.redis.send(["GET", key], { buffers: true })) as Uint8Array;
    const header = raw.length -
      (decodeEnvelope(raw).payload as Uint8Array).length;
    const payload = deflateRawSync(new Uint8Array(4097));
    const forged = new Uint8Array(header + payload.length);
    forged.set(raw.subarray(0, header));
    forged.set(payload, header);
    await db.redis.send(["SET", key, forged, "PX", 60_000]);
    assert.equal(await workerd.fetch(`/inflate?ns=${ns}&key=z`), {
      status: 200,
      body: {
        length: 1,
        errors: [
          "RangeError: a compressed value inflates past maxInflatedBytes (4096 bytes)",
        ],
      },
    });
  },
);

if (canDrive) Workers.run();
else {console.log(
    "herdless under workerd: skipped (miniflare drives workerd from Node only)",
  );}
