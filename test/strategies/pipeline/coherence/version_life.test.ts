/**
 * Version keys expire: a TTL of VERSION_TTL_MS (24 h) when created, extended
 * back to it only when a process uses the key and less than half remains.
 * Commands are watched through a client that records what it sends; time is
 * a fake clock where the half-life has to pass (Redis' own TTLs are moved
 * with PEXPIRE, as if that much time had gone by).
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { RedisClient } from "../../../../resp/client.ts";
import type { Arg, SendOptions, TrackingClient } from "../../../../resp/types.ts";
import { Invalidations, Versions } from "../../../../strategies/pipeline/coherence/mod.ts";
import { epochKeyOf, escapeTag, tagKeyPrefix } from "../../../../strategies/pipeline/coherence/version_keys.ts";
import { VERSION_TTL_MS, VersionLife } from "../../../../strategies/pipeline/coherence/version_life.ts";
import { pipeline } from "../../../../strategies/pipeline/pipeline.ts";
import { useRedis } from "../../../support/fixture.ts";
import { origin } from "../../../support/strategies.ts";
import { until } from "../../../support/wait.ts";

const Life = suite("version keys expire");
const db = useRedis(Life, { prefix: "life", clients: 2 });

const HALF = VERSION_TTL_MS / 2;

/** `client`, recording the commands sent through it (name and first key). */
function recorded(client: RedisClient): { redis: RedisClient; sent: string[][] } {
  const sent: string[][] = [];
  const redis = new Proxy(client, {
    get(target, prop) {
      if (prop === "send") {
        return (args: readonly Arg[], options?: SendOptions) => {
          sent.push(args.map(String));
          return target.send(args, options);
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { redis, sent };
}

const pexpires = (sent: string[][]) => sent.filter((c) => c[0] === "PEXPIRE").map((c) => `${c[1]} ${c[2]}`);
const pttl = async (key: string) => Number(await db.other.send(["PTTL", key]));

Life("the key layout's numbers: a version key lives 24 h", () => {
  assert.is(VERSION_TTL_MS, 86_400_000);
});

Life(
  "2,000 sets with per-entity tags and ttlMs 50 leave no permanent key: every version key expires within 24 h",
  async () => {
    const namespace = db.ns();
    const cache = pipeline({ redis: db.redis, ttlMs: 50, namespace });
    try {
      for (let batch = 0; batch < 20; batch++) {
        await Promise.all(
          Array.from({ length: 100 }, (_, i) => {
            const id = batch * 100 + i;
            return cache.set(["order", id], { id }, { tags: [`order:${id}`, `customer:${id % 7}`] });
          }),
        );
      }
      const keys = (await db.other.send(["KEYS", `${namespace}:*`])) as string[];
      const versionKeys = keys.filter((k) => k.startsWith(`${namespace}:{}:`));
      // 2,000 order tags, 7 customer tags and the epoch.
      assert.is(versionKeys.length, 2_008);
      const ttls = await Promise.all(versionKeys.map(pttl));
      assert.equal(
        ttls.filter((t) => !(t > 0 && t <= VERSION_TTL_MS)),
        [],
        "a version key without a TTL, or over 24 h",
      );
      // Each data key lives its 50 ms; none is permanent either.
      const dataTtls = await Promise.all(keys.filter((k) => k.endsWith(":data")).map(pttl));
      assert.ok(dataTtls.every((t) => t === -2 || (t >= 0 && t <= 50)), JSON.stringify(dataTtls.slice(0, 5)));
    } finally {
      await cache.close();
    }
  },
);

Life(
  "every way a version key is made gives it the 24 h TTL: a load's stamp, a loader's setTags(), invalidateTags(), clear()",
  async () => {
    const namespace = db.ns();
    const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace });
    try {
      await cache.get("stamped", () => 1, { tags: ["s"] });
      await cache.get("chosen", (ctx) => {
        ctx.setTags(["chosen"]);
        return 2;
      });
      await cache.invalidateTags(["a", "b c"]);
      const made = [
        epochKeyOf(namespace),
        ...["s", "chosen", "a", "b c"].map((t) => tagKeyPrefix(namespace) + escapeTag(t)),
      ];
      for (const key of made) {
        const left = await pttl(key);
        assert.ok(left > HALF && left <= VERSION_TTL_MS, `${key}: ${left}`);
      }
      await db.other.send(["PERSIST", epochKeyOf(namespace)]);
      await cache.clear();
      const left = await pttl(epochKeyOf(namespace));
      assert.ok(left > HALF && left <= VERSION_TTL_MS, `the epoch after clear(): ${left}`);
    } finally {
      await cache.close();
    }
  },
);

Life("an untracked cache, which reads the epoch beside each key, looks at its TTL at most every 6 h", async () => {
  const key = epochKeyOf(db.ns());
  await db.other.send(["SET", key, "epochtoken00", "PX", 3_600_000]);
  const { redis, sent } = recorded(db.redis);
  let now = 0;
  const life = new VersionLife({ redis, commandTimeoutMs: 1_000, now: () => now }, () => []);
  life.epochRead(key);
  await until(async () => (await pttl(key)) > HALF);
  assert.equal(pexpires(sent), [`${key} ${VERSION_TTL_MS}`]);
  life.epochRead(key);
  now += VERSION_TTL_MS / 4 - 1;
  life.epochRead(key);
  assert.is(sent.filter((c) => c[0] === "PTTL").length, 1);
  now += 1;
  life.epochRead(key);
  assert.is(sent.filter((c) => c[0] === "PTTL").length, 2);
});

Life(
  "a version read with less than half its TTL left is extended back to 24 h; with more, it is left alone",
  async () => {
    const namespace = db.ns();
    const { redis, sent } = recorded(db.redis);
    const cache = pipeline({ redis, ttlMs: 60_000, namespace });
    const o = origin((call) => `v${call}`);
    const tags = { tags: ["t"] };
    const tagKey = tagKeyPrefix(namespace) + "t";
    try {
      assert.is(await cache.get("k", o.load, tags), "v1");
      assert.equal(pexpires(sent), [], "created with its TTL: nothing to extend");
      // As if 13 h had gone by: 11 h left. This write also makes the cache forget the version.
      await db.other.send(["PEXPIRE", tagKey, HALF - 3_600_000]);
      await until(async () => (await cache.get("k", o.load, tags)) === "v1" && pexpires(sent).length > 0);
      assert.equal(pexpires(sent), [`${tagKey} ${VERSION_TTL_MS}`]);
      assert.ok((await pttl(tagKey)) > HALF);
      // As if 6 h had gone by: 18 h left. Read again (a PTTL beside its GET), not extended.
      const before = sent.length;
      await db.other.send(["PEXPIRE", tagKey, HALF + 6 * 3_600_000]);
      await until(async () =>
        (await cache.get("k", o.load, tags)) === "v1" &&
        sent.slice(before).some((c) => c[0] === "PTTL" && c[1] === tagKey)
      );
      assert.equal(pexpires(sent), [`${tagKey} ${VERSION_TTL_MS}`]);
      assert.ok((await pttl(tagKey)) <= HALF + 6 * 3_600_000);
      assert.is(o.calls, 1, "the value stayed a hit throughout");
    } finally {
      await cache.close();
    }
  },
);

Life(
  "a version kept in memory is extended by its first use past its half-life, once, and an unused one is not",
  async () => {
    const namespace = db.ns();
    const { redis, sent } = recorded(db.redis);
    let now = 1_000;
    const clock = () => now;
    const invalidations = new Invalidations(redis as unknown as TrackingClient, undefined, () => {}, {
      timeoutMs: 1_000,
      now: clock,
    });
    await invalidations.ready(1_000, now);
    const versions = new Versions({ redis, namespace, invalidations, commandTimeoutMs: 1_000, now: clock });
    try {
      // Created (SET NX PX), then read again and kept: our own SET made the first read stale.
      await versions.stamp(["used", "unused"]);
      const stamp = await versions.stamp(["used", "unused"]);
      assert.ok(versions.currentKnown(stamp.epoch, ["used"], [stamp.tagVersions[0]!]));
      assert.equal(pexpires(sent), []);
      // Half a day later, the sweep marks them; a hit on an entry tagged "used" extends the epoch and that tag.
      now += HALF + 1;
      versions.life.sweep();
      assert.ok(versions.currentKnown(stamp.epoch, ["used"], [stamp.tagVersions[0]!]));
      assert.ok(versions.currentKnown(stamp.epoch, ["used"], [stamp.tagVersions[0]!]));
      const usedKey = tagKeyPrefix(namespace) + "used";
      assert.equal(pexpires(sent).sort(), [
        `${epochKeyOf(namespace)} ${VERSION_TTL_MS}`,
        `${usedKey} ${VERSION_TTL_MS}`,
      ]);
    } finally {
      await invalidations.close();
    }
  },
);

Life(
  "an expired version key comes back as a new token: what was stamped with the old one is a miss, never revived",
  async () => {
    const namespace = db.ns();
    const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace });
    const o = origin((call) => `v${call}`);
    const tags = { tags: ["t"] };
    try {
      assert.is(await cache.get("k", o.load, tags), "v1");
      const tagKey = tagKeyPrefix(namespace) + "t";
      const old = await db.other.send(["GET", tagKey]);
      await db.other.send(["PEXPIRE", tagKey, 1]);
      await until(async () => (await db.other.send(["EXISTS", tagKey])) === 0);
      assert.is(await cache.get("k", o.load, tags), "v2");
      assert.is.not(await db.other.send(["GET", tagKey]), old);
      assert.is(await cache.get("k", o.load, tags), "v2");
      // The epoch too: everything under the old one is a miss.
      await db.other.send(["PEXPIRE", epochKeyOf(namespace), 1]);
      await until(async () => (await db.other.send(["EXISTS", epochKeyOf(namespace)])) === 0);
      assert.is(await cache.get("k", o.load, tags), "v3");
    } finally {
      await cache.close();
    }
  },
);

Life.run();
