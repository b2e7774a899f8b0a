/**
 * Large values through the full pipeline.
 *
 * Replies past the pub/sub limit: a subscribed connection falls under Redis' pub/sub output-buffer
 * limit (32 MB hard), so a cache that subscribed on its command connection
 * had it closed by the server as soon as replies in flight passed 32 MB.
 * Wake-ups now come from client tracking on that connection, which keeps it
 * a normal client: each wave here queues more than 32 MB of replies on it.
 *
 * A value slower to write than its lease: a value that takes longer to reach Redis than `leaseMs` or
 * `commandTimeoutMs` (the proxy holds its bytes half-way) is still stored
 * once: the lease is extended and the publication's deadline sized to it.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connect } from "../../resp/client.ts";
import { coalesce } from "../../strategies/coalesce.ts";
import { jitter } from "../../strategies/jitter.ts";
import { lease } from "../../strategies/lease.ts";
import { limit } from "../../strategies/limit.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import { swr } from "../../strategies/swr.ts";
import { xfetch } from "../../strategies/xfetch.ts";
import { useRedis } from "../support/fixture.ts";
import { startProxy } from "../support/proxy.ts";
import type { RedisServer } from "../support/redis_server.ts";
import { until } from "../support/wait.ts";

// Runs alone: the second test's publication gets the deadline herdless sizes to a 16 MB value
// (10 MB/s), and the test's proxy, held 900 ms of it, must move the rest in time: a CPU-bound file
// in the other worker slowed it past that on 2 shared cores.

const MB = 1024 * 1024;

const test = suite<{ server: RedisServer }>("large values");
useRedis(test, { clients: 0 });

/** The `CLIENT LIST` line of the connection named `name`, asked through redis-cli (which CLIENT KILL skips). */
function clientLine(server: RedisServer, name: string): string | undefined {
  return server.cli("CLIENT", "LIST").split("\n").find((l) => l.includes(` name=${name} `));
}

test(
  "RESP3 with default wake-ups: 64 gets of 1 MB, 4 of 10 MB and one of 40 MB at once all succeed; the connection is no pub/sub client and CLIENT KILL TYPE normal reaches it",
  async ({ server }) => {
    const redis = await connect({ url: server.url, resp: 3, name: "large-values" });
    const cache = pipeline<string>(
      // A 40 MB reply behind 64 MB of others can take longer than the default 1 s on 2 busy shared
      // cores: this test is about the pub/sub output-buffer limit, not timeouts.
      { redis, ttlMs: 60_000, namespace: "large", codec: "string", commandTimeoutMs: 30_000 },
      swr({ staleMs: 60_000 }),
      xfetch(),
      coalesce(),
      lease(),
      jitter({ spreadMs: 1000 }),
      limit({ concurrency: 4 }),
    );
    try {
      const sizes = { one: 1 * MB, ten: 10 * MB, forty: 40 * MB };
      // Loaded through the pipeline, so the lease asked for its wake-ups
      // (the subscription that used to land on this connection).
      for (const [key, bytes] of Object.entries(sizes)) {
        assert.is((await cache.get(key, () => key[0]!.repeat(bytes))).length, bytes);
      }
      // Each wave queues more than 32 MB of replies on the one connection.
      const waves: [keyof typeof sizes, number][] = [["one", 64], ["ten", 4], ["forty", 1]];
      for (const [key, count] of waves) {
        const values = await Promise.all(
          Array.from({ length: count }, () => cache.get(key, () => Promise.reject(new Error("reloaded")))),
        );
        for (const value of values) {
          assert.ok(value.length === sizes[key] && value[0] === key[0], `a ${key} MB get returned something else`);
        }
      }
      assert.equal([cache.stats().loads, cache.stats().hits], [3, 69]);
      const before = clientLine(server, "large-values");
      assert.ok(before !== undefined, "no connection named large-values");
      // Tracking (t), never pub/sub (P): the pub/sub output-buffer limit does not apply.
      assert.match(before, /\bflags=t\b/);
      assert.match(before, /\bsub=0 psub=0\b/);
      const id = /\bid=(\d+)/.exec(before)![1];
      // redis-cli's own connection is skipped (SKIPME yes); ours, the only
      // other one, is a normal client and goes (a subscribed one would not).
      assert.is(server.cli("CLIENT", "KILL", "TYPE", "normal").trim(), "1");
      // The client reconnects by itself (a real event, polled for); the
      // cache goes on on the new connection.
      await until(() => {
        const line = clientLine(server, "large-values");
        return line !== undefined && /\bid=(\d+)/.exec(line)![1] !== id;
      });
      assert.is((await cache.get("one", () => Promise.reject(new Error("reloaded")))).length, MB);
    } finally {
      await cache.close();
      redis.destroy();
    }
  },
);

test(
  "a 16 MB value whose publication outlasts leaseMs and commandTimeoutMs (held half-way) is stored once, under a lease extended to its size",
  async ({ server }) => {
    const admin = await connect(server.url);
    const proxy = await startProxy(server.port);
    const redis = await connect({ url: proxy.url, resp: 3 });
    const leaseMs = 300;
    const cache = pipeline<string>(
      { redis, ttlMs: 60_000, namespace: "sized", codec: "string", commandTimeoutMs: 300 },
      lease({ leaseMs }),
    );
    // Reads the value back with the default commandTimeoutMs: a read's
    // deadline cannot be sized to a value it has not seen yet.
    const reader = pipeline<string>({ redis: admin, ttlMs: 60_000, namespace: "sized", codec: "string" }, lease());
    try {
      const keys = cache.keys("big");
      let calls = 0;
      const load = () => {
        calls++;
        return "v".repeat(16 * MB);
      };
      // Everything before the value (tracking, the lease, its extension) is
      // small; the publication's first megabyte passes, the rest waits.
      const held = proxy.pauseAfter(MB);
      // Settled at once: it must not reject unobserved while the test holds the value.
      const first = cache.get("big", load).then((value) => value, (error: Error) => error);
      await held;
      const pttl = Number(await admin.send(["PTTL", keys.lease]));
      // Held three times commandTimeoutMs and leaseMs: long enough for both to run out.
      await new Promise((r) => setTimeout(r, 900));
      proxy.resume();
      const got = await first;
      if (got instanceof Error) return assert.unreachable(`the first get failed: ${got.name}: ${got.message}`);
      assert.is(got.length, 16 * MB);
      // The lease was extended before the value was sent: sized to it, well past leaseMs.
      assert.ok(pttl > 4 * leaseMs, `the lease was not extended (PTTL ${pttl} ms while the value was held)`);
      assert.equal([cache.stats().lateRejected, cache.stats().timeouts], [0, 0]);
      assert.is(Number(await admin.send(["STRLEN", keys.data])) > 16 * MB, true, "not stored");
      assert.is(await admin.send(["EXISTS", keys.lease]), 0, "the publication drops the lease");
      // Served from Redis from now on, not loaded on every get.
      assert.is((await reader.get("big", load)).length, 16 * MB);
      assert.equal([calls, cache.stats().loads, reader.stats().hits], [1, 1, 1]);
    } finally {
      await Promise.all([cache.close(), reader.close()]);
      redis.destroy();
      admin.destroy();
      await proxy.close();
    }
  },
);

test.run();
