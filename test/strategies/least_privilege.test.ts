/**
 * The whole API as a least-privilege ACL user (the rule docs/acl.md ships),
 * on RESP2 and RESP3; and one refusal per permission family, each a NOPERM
 * naming the command and the rule to add.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { readFileSync } from "node:fs";
import { connect, type RedisClient } from "../../resp/client.ts";
import { ConnectionError, isRedisReplyError, RedisReplyError } from "../../resp/errors.ts";
import { coalesce } from "../../strategies/coalesce.ts";
import { lease } from "../../strategies/lease.ts";
import { near } from "../../strategies/near.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import { swr } from "../../strategies/swr.ts";
import type { CacheEvent } from "../../strategies/events.ts";
import { rejects } from "../support/assert.ts";
import { useRedis } from "../support/fixture.ts";
import { KEY_REFUSED, SCRIPT_COMMAND_REFUSED } from "../support/server_text.ts";
import { events, origin, untilNearHit } from "../support/strategies.ts";
import { until } from "../support/wait.ts";

/**
 * docs/acl.md's rule for namespace `products`, user `app`, as users paste it
 * (the test checks the page holds it verbatim, and runs every call as it).
 */
const RULE = "ACL SETUSER app on >app-password resetkeys ~products:{* resetchannels &products:published -@all " +
  "+get +set +setrange +del +exists +pexpire +pttl +time +eval +evalsha +publish +subscribe +unsubscribe " +
  "+hello +client|setname +client|tracking";

const NS = "products";
const PASSWORD = "app-password";

/** The rule's arguments after `ACL SETUSER`, for `user`, with `drop` left out and `swap` replacing parts. */
function ruleFor(user: string, drop: readonly string[] = [], swap: Record<string, string> = {}): string[] {
  const parts = RULE.split(" ").slice(3).filter((p) => !drop.includes(p)).map((p) => swap[p] ?? p);
  return [user, ...parts];
}

const Acl = suite<{ redis: RedisClient }>("least privilege: the ACL rule docs/acl.md ships");
const db = useRedis(Acl, { prefix: "acl", clients: 1 });

async function setUser(user: string, drop: readonly string[] = [], swap: Record<string, string> = {}) {
  const reply = await db.redis.send(["ACL", "SETUSER", ...ruleFor(user, drop, swap)]);
  assert.is(reply, "OK", `ACL SETUSER ${user} was refused`);
}

function as(user: string, resp: 2 | 3, name?: string): Promise<RedisClient> {
  const url = `redis://${user}:${PASSWORD}@127.0.0.1:${db.server.port}`;
  return db.client(name === undefined ? { url, resp } : { url, resp, name });
}

Acl.before(async () => {
  await setUser("app");
});

Acl("docs/acl.md ships the rule these tests run as", () => {
  const page = readFileSync(new URL("../../docs/acl.md", import.meta.url), "utf8");
  assert.ok(page.includes(RULE), "docs/acl.md does not hold the ACL rule verbatim");
});

for (const resp of [2, 3] as const) {
  Acl(`RESP${resp}: every call of the API works as the least-privilege user`, async () => {
    const redis = await as("app", resp, "herdless-app");
    assert.is(await redis.send(["ACL", "WHOAMI"]).catch((e) => e.code), "NOPERM"); // really not an admin
    const writerRedis = await as("app", resp);
    const ev = events();
    const modes: CacheEvent[] = [];
    const cache = pipeline(
      {
        redis,
        ttlMs: 60_000,
        namespace: NS,
        onEvent: (e) => (ev.onEvent(e), e.type === "invalidation-mode" && modes.push(e)),
      },
      near(),
      swr({ staleMs: 1000 }),
      coalesce(),
      lease({ leaseMs: 5000, waitMs: 5000 }),
    );
    const writer = pipeline(
      { redis: writerRedis, ttlMs: 60_000, namespace: NS },
      lease({ leaseMs: 5000, waitMs: 5000 }),
    );
    try {
      const o = origin((n) => `v${n}`);
      // get: load, publish (script: GET, SET, TIME, SETRANGE, DEL, PUBLISH), then kept near.
      assert.is(await cache.get(`item-${resp}`, o.load), "v1");
      // Kept near once this cache's own publication was heard (a message, on RESP2, arrives when it arrives).
      await untilNearHit(cache, `item-${resp}`, "v1");
      assert.is(cache.invalidationMode(), resp === 3 ? "tracking" : "messages");
      // set() elsewhere reaches the near tier.
      const dropped = ev.reach("near-invalidation", 1);
      await writer.set(`item-${resp}`, "w1");
      await dropped;
      assert.is(await cache.get(`item-${resp}`, o.load), "w1");
      assert.is(await cache.peek(`item-${resp}`), "w1");
      // getMany, with one miss loaded.
      assert.equal(
        await cache.getMany(
          [`item-${resp}`, `other-${resp}`],
          (missing) => Promise.resolve(missing.map((id) => `loaded ${id}`)),
        ),
        ["w1", `loaded other-${resp}`],
      );
      // Tags and clear.
      assert.is(await cache.get(`tagged-${resp}`, () => "t1", { tags: ["t"] }), "t1");
      await writer.invalidateTags(["t"]);
      assert.is(await cache.get(`tagged-${resp}`, () => "t2", { tags: ["t"] }), "t2");
      await cache.invalidate(`item-${resp}`);
      assert.is(await cache.peek(`item-${resp}`), undefined);
      await cache.clear();
      assert.is(await cache.peek(`other-${resp}`), undefined);
      const report = await cache.warm([`a-${resp}`, `b-${resp}`], (ctx) => `warm ${ctx.identity}`);
      assert.is(report.loaded, 2);
      // A lease waiter: the writer holds the load, this cache waits and gets its value.
      const held = origin(() => "held");
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const owner = writer.get(`leased-${resp}`, async (ctx) => {
        const value = await held.load(ctx);
        await gate;
        return value;
      });
      await held.called(1);
      const waited = ev.reach("wait", 1);
      const waiter = cache.get(`leased-${resp}`, () => "not me");
      await waited;
      release();
      assert.equal(await Promise.all([owner, waiter]), ["held", "held"]);
      // Said once, when it came on; never changed after.
      assert.equal(modes.map((e) => e.type === "invalidation-mode" && e.reason), [
        resp === 3 ? "client tracking on" : "invalidation messages on",
      ], "the mode changed");
    } finally {
      await Promise.all([cache.close(), writer.close()]);
    }
  });
}

/** A cache as `user` (RESP3, near, lease), and the first error its first get meets. */
async function firstFailure(user: string, strategies = () => [near(), lease()]): Promise<RedisReplyError> {
  const redis = await as(user, 3);
  const cache = pipeline({ redis, ttlMs: 60_000, namespace: NS, failOpen: false }, ...strategies());
  try {
    const e = await cache.get(`denied-${user}`, () => "v").then(() => undefined, (e: unknown) => e);
    assert.ok(isRedisReplyError(e), `expected a RedisReplyError, got ${String(e)}`);
    return e as RedisReplyError;
  } finally {
    await cache.close();
  }
}

Acl(
  "the rule covers its namespace alone: as this user, a cache of 'products:eu' can read and write nothing",
  async () => {
    const redis = await as("app", 3);
    const eu = pipeline({ redis, ttlMs: 60_000, namespace: `${NS}:eu`, failOpen: false });
    try {
      const e = await eu.get("sku", () => "v").then(() => undefined, (e: unknown) => e);
      assert.ok(isRedisReplyError(e) && e.code === "NOPERM", `expected NOPERM, got ${String(e)}`);
      assert.match((e as Error).message, /'~(products:eu|<namespace>):\{\*'/);
      await rejects(() => eu.invalidateTags(["t"]), RedisReplyError, /NOPERM/);
      assert.is(await redis.send(["PUBLISH", `${NS}:eu:published`, "x"]).catch((e) => e.code), "NOPERM");
    } finally {
      await eu.close();
    }
  },
);

Acl("without +pttl: every call still works, and the version keys still get their TTL", async () => {
  await setUser("nopttl", ["+pttl"]);
  const redis = await as("nopttl", 3);
  const cache = pipeline({ redis, ttlMs: 60_000, namespace: NS }, near(), lease());
  try {
    assert.is(await cache.get("pttl-1", () => "v1", { tags: ["pttl"] }), "v1");
    await until(async () =>
      (await cache.get("pttl-1", () => "x", { tags: ["pttl"] })) === "v1" && cache.stats().nearHits > 0
    );
    await cache.invalidateTags(["pttl"]);
    assert.is(await cache.get("pttl-1", () => "v2", { tags: ["pttl"] }), "v2");
    assert.ok(Number(await db.redis.send(["PTTL", `${NS}:{}:tag:pttl`])) > 0);
    assert.ok(Number(await db.redis.send(["PTTL", `${NS}:{}:epoch`])) > 0);
  } finally {
    await cache.close();
  }
});

Acl("without +publish: the publish script's refusal is a NOPERM naming PUBLISH and '+publish'", async () => {
  await setUser("nopublish", ["+publish"]);
  const e = await firstFailure("nopublish");
  assert.is(e.code, "NOPERM");
  assert.match(
    e.message,
    /calls 'publish' at line \d+ and this user may not run 'publish'; add '\+publish' to the user's ACL rule/,
  );
  assert.match((e.cause as Error).message, new RegExp(`^${SCRIPT_COMMAND_REFUSED.source}`));
});

Acl("without +eval/+evalsha: the script command's refusal names it and the rule", async () => {
  await setUser("noeval", ["+eval", "+evalsha"]);
  const e = await firstFailure("noeval");
  assert.is(e.code, "NOPERM");
  assert.match(e.message, /'(eval|evalsha)' command; add '\+(eval|evalsha)' to the user's ACL rule$/);
});

Acl("without +get: a command sent directly names the command and '+get'", async () => {
  await setUser("noget", ["+get"]);
  const e = await firstFailure("noget", () => []);
  assert.is(e.code, "NOPERM");
  assert.match(e.message, /'get' command; add '\+get' to the user's ACL rule$/);
});

Acl("without the key pattern: a NOPERM naming the namespace's key pattern", async () => {
  await setUser("nokeys", [], { "~products:{*": "~elsewhere:{*" });
  const e = await firstFailure("nokeys", () => [lease()]);
  assert.is(e.code, "NOPERM");
  assert.match(
    e.message,
    new RegExp(
      `^NOPERM ${KEY_REFUSED.source}.*; add (a key pattern that matches them \\('~<namespace>:\\{\\*'|'~products:\\{\\*')`,
    ),
  );
  // A script's own key refusal names the namespace's pattern from its KEYS.
  const redis = await as("nokeys", 3);
  const { Script } = await import("../../resp/script.ts");
  await setUser("nokeys2", [], { "~products:{*": "~products:{a}*" });
  const inner = new Script("\nreturn redis.call('GET', 'products:{b}:data')");
  const redis2 = await as("nokeys2", 3);
  const e2 = (await rejects(() => inner.run(redis2, ["products:{a}:data"], []), RedisReplyError)) as RedisReplyError;
  assert.is(e2.code, "NOPERM");
  assert.match(
    e2.message,
    /calls 'get' at line 2 and this user may not access the keys 'get' uses; add '~products:\{\*'/,
  );
  redis.destroy();
});

Acl("without the channel pattern: a NOPERM naming the namespace's channel pattern", async () => {
  await setUser("nochannels", [], { "&products:published": "&elsewhere:published" });
  const e = await firstFailure("nochannels");
  assert.is(e.code, "NOPERM");
  assert.match(
    e.message,
    /calls 'publish' at line \d+ and this user may not publish to the channel 'publish' names; add '&products:published'/,
  );
});

Acl("without +client|tracking: near() keeps working on invalidation messages, and says so", async () => {
  await setUser("notracking", ["+client|tracking"]);
  const redis = await as("notracking", 3);
  const ev = events();
  const cache = pipeline({ redis, ttlMs: 60_000, namespace: NS, onEvent: ev.onEvent }, near(), lease());
  const writer = pipeline({ redis: await as("app", 3), ttlMs: 60_000, namespace: NS });
  try {
    assert.is(await cache.get("nt", () => "v1"), "v1");
    assert.is(cache.invalidationMode(), "messages");
    const change = ev.seen.find((e) => e.type === "invalidation-mode");
    assert.ok(change !== undefined && change.type === "invalidation-mode");
    assert.is(change.mode, "messages");
    assert.match(change.reason, /NOPERM .*'client\|tracking'/);
    assert.is(cache.stats().invalidationMode, 2);
    await until(async () => (await cache.get("nt", () => "x")) === "v1" && cache.stats().nearHits >= 1);
    const dropped = ev.reach("near-invalidation", 1);
    await writer.set("nt", "v2");
    await dropped;
    assert.is(await cache.get("nt", () => "x"), "v2");
  } finally {
    await Promise.all([cache.close(), writer.close()]);
  }
});

Acl("without +client|setname on RESP2: connected without the name, an event says why", async () => {
  await setUser("noname", ["+client|setname"]);
  const seen: { type: string; error?: unknown }[] = [];
  const redis = await connect({
    url: `redis://noname:${PASSWORD}@127.0.0.1:${db.server.port}`,
    resp: 2,
    name: "herdless-app",
    onEvent: (e) => seen.push(e as never),
  });
  try {
    assert.equal(seen.map((e) => e.type), ["connect", "name-refused", "ready"]);
    assert.is((seen[1]!.error as RedisReplyError).code, "NOPERM");
    assert.is(await redis.send(["GET", "products:{x}:data"]), null);
  } finally {
    redis.destroy();
  }
});

Acl(
  "without +select (a db other than 0): connect fails naming the command and the rule",
  async () => {
    const select = await rejects(
      () => connect({ url: `redis://app:${PASSWORD}@127.0.0.1:${db.server.port}/1`, resp: 3 }),
      ConnectionError,
    );
    assert.match(
      (select as Error).message,
      /: user "app" may not run SELECT \(NOPERM .*add '\+select' to the user's ACL rule\)$/,
    );
  },
);

Acl.run();
