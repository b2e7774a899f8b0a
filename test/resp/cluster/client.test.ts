import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  type ClusterClient,
  connectCluster,
  CrossSlotError,
  isCrossSlotError,
  keySlot,
} from "../../../resp/cluster/client.ts";
import { connect, type RedisClient } from "../../../resp/client.ts";
import { ConnectionError, isConnectionError, RedisReplyError, TimeoutError } from "../../../resp/errors.ts";
import { Script } from "../../../resp/script.ts";
import type { Arg, ConnectionEvent, Reply } from "../../../resp/types.ts";
import { rejects, until } from "../../support/assert.ts";
import { load, summary } from "../../support/load.ts";
import { parseClusterNodes, type RedisCluster } from "../../support/redis_cluster.ts";
import { freePort, startRedis } from "../../support/redis_server.ts";
import { sharedCluster } from "../../support/fixture.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// --- options, no server needed ---

const options = suite("connectCluster() options");

options("every setting is validated up front, naming it", () => {
  const bad: [unknown, string][] = [
    [[], "Cannot connect to cluster: 'seeds' must be a non-empty array of URLs or host:port strings"],
    [{ seeds: "redis://x" }, "Cannot connect to cluster: 'seeds' must be a non-empty array"],
    [["127.0.0.1:7000", 7001], "Cannot connect to cluster: 'seeds[1]' must be a non-empty string, got number"],
    [["unix:///tmp/r.sock"], "Cannot connect to cluster: 'seeds[0]' must be a TCP address"],
    [["redis://127.0.0.1:7000/2"], "Cannot connect to cluster: 'seeds[0]' selects db 2; a cluster has only db 0"],
    [
      { seeds: ["127.0.0.1:7000"], maxRedirections: 0 },
      "Cannot connect to cluster: 'maxRedirections' must be a positive integer, got 0",
    ],
    [
      { seeds: ["127.0.0.1:7000"], retryDelayMs: 1.5 },
      "Cannot connect to cluster: 'retryDelayMs' must be a positive integer, got 1.5",
    ],
    [
      { seeds: ["127.0.0.1:7000"], offlineQueue: -1 },
      "Cannot connect to cluster: 'offlineQueue' must be a non-negative integer, got -1",
    ],
    [
      { seeds: ["127.0.0.1:7000"], offlineTimeoutMs: "1" },
      "Cannot connect to cluster: 'offlineTimeoutMs' must be a non-negative integer, got \"1\"",
    ],
    [
      { seeds: ["127.0.0.1:7000"], commandTimeoutMs: -5 },
      "Cannot connect: 'commandTimeoutMs' must be a non-negative integer, got -5",
    ],
    [
      { seeds: ["127.0.0.1:7000"], connectTimeoutMs: 0 },
      "Cannot connect: 'connectTimeoutMs' must be a positive integer, got 0",
    ],
    [["127.0.0.1:0"], "Cannot connect: 'port' must be an integer in 1..65535, got 0"],
  ];
  for (const [value, message] of bad) {
    let thrown: unknown;
    try {
      void connectCluster(value as string[]);
    } catch (e) {
      thrown = e;
    }
    assert.ok(
      thrown instanceof RangeError || thrown instanceof TypeError,
      `${JSON.stringify(value)} throws synchronously`,
    );
    assert.ok((thrown as Error).message.includes(message), `${(thrown as Error).message} includes ${message}`);
  }
});

options(
  "connectCluster() rejects with ConnectionError when no seed answers, or a seed is no cluster node",
  async () => {
    const port = await freePort();
    await rejects(
      () => connectCluster([`127.0.0.1:${port}`]),
      ConnectionError,
      `Cannot read the cluster slot map from any seed (127.0.0.1:${port})`,
    );
    const single = await startRedis();
    try {
      const e = await rejects(
        () => connectCluster([single.url]),
        ConnectionError,
        /^Cannot read the cluster slot map from any seed \(127\.0\.0\.1:\d+\)$/,
      );
      assert.match(String((e.cause as Error).message), /cluster support disabled/);
    } finally {
      await single.stop();
    }
  },
);

options.run();

// --- against a real cluster: 3 primaries, 3 replicas ---

interface Ctx {
  cluster: RedisCluster;
  redis: ClusterClient;
  admins: Map<number, RedisClient>;
}

const shared = sharedCluster({
  open: async (cluster) => ({
    redis: await connectCluster({
      seeds: cluster.seeds.slice(0, 2),
      name: "herdless-cluster-test",
      reconnect: { minMs: 20, maxMs: 200 },
    }),
    admins: new Map<number, RedisClient>(),
  }),
  close({ redis, admins }) {
    redis.destroy();
    for (const a of admins.values()) a.destroy();
  },
});

/** A direct connection to one node, for administration behind the cluster client's back. */
async function admin(ctx: Ctx, port: number): Promise<RedisClient> {
  // Never fall back to connect()'s default port: that is someone else's server.
  if (!Number.isInteger(port) || port <= 0) throw new Error(`admin(): no such port ${port}`);
  let c = ctx.admins.get(port);
  if (c === undefined) {
    c = await connect({ port, reconnect: { minMs: 20, maxMs: 200 } });
    ctx.admins.set(port, c);
  }
  return c;
}

async function nodesVia(ctx: Ctx, port: number) {
  return parseClusterNodes(String(await (await admin(ctx, port)).send(["CLUSTER", "NODES"])));
}

/** A key whose slot the given primary owns, with a hash tag so related keys follow it. */
function tagOwnedBy(cluster: RedisCluster, port: number, prefix: string): string {
  const ranges = cluster.primaries().find((p) => p.port === port)!.slots;
  for (let i = 0;; i++) {
    const tag = `${prefix}${i}`;
    const s = keySlot(tag);
    if (ranges.some(([a, b]) => s >= a && s <= b)) return tag;
  }
}

/** Start a slot migration: IMPORTING on the target, MIGRATING on the source (the documented order). */
async function beginMigration(ctx: Ctx, slot: number, from: number, to: number): Promise<void> {
  await (await admin(ctx, to)).send(["CLUSTER", "SETSLOT", slot, "IMPORTING", ctx.cluster.id(from)]);
  await (await admin(ctx, from)).send(["CLUSTER", "SETSLOT", slot, "MIGRATING", ctx.cluster.id(to)]);
}

/** MIGRATE up to `batch` keys of the slot; returns how many moved. */
async function moveKeys(ctx: Ctx, slot: number, from: number, to: number, batch: number): Promise<number> {
  const source = await admin(ctx, from);
  const keys = (await source.send(["CLUSTER", "GETKEYSINSLOT", slot, batch])) as string[];
  if (keys.length > 0) await source.send(["MIGRATE", "127.0.0.1", to, "", 0, 5000, "KEYS", ...keys]);
  return keys.length;
}

/** Assign the slot to the target on the target, the source, then every other primary. */
async function endMigration(ctx: Ctx, slot: number, from: number, to: number): Promise<void> {
  const id = ctx.cluster.id(to);
  const others = ctx.cluster.primaries().map((p) => p.port).filter((p) => p !== from && p !== to);
  for (const port of [to, from, ...others]) {
    await (await admin(ctx, port)).send(["CLUSTER", "SETSLOT", slot, "NODE", id]);
  }
}

const routing = suite<Ctx>("ClusterClient: routing");
shared.use(routing);

routing("every key lands on the primary that owns its slot, with no redirection", async (ctx) => {
  const { redis, cluster } = ctx;
  const keys = Array.from({ length: 300 }, (_, i) => `route:${i}`);
  await Promise.all(keys.map((k) => redis.send(["SET", k, k])));
  assert.equal(await Promise.all(keys.map((k) => redis.send(["GET", k]))), keys);
  const primaries = cluster.primaries();
  const owners = new Set<number>();
  for (const k of keys.slice(0, 30)) {
    const owner = cluster.ownerOf(keySlot(k));
    owners.add(owner);
    assert.is(redis.nodeFor(k), `127.0.0.1:${owner}`);
    assert.is(await (await admin(ctx, owner)).send(["GET", k]), k, "stored on the owner itself");
  }
  assert.is(owners.size, primaries.length, "the keys spread over every primary");
  assert.is(redis.stats().moved, 0);
  assert.is(redis.stats().asked, 0);
});

routing("onEvent hears each node's connection, told apart by server", async (ctx) => {
  const events: ConnectionEvent[] = [];
  const redis = await connectCluster({ seeds: ctx.cluster.seeds.slice(0, 1), onEvent: (e) => events.push(e) });
  try {
    const ports = ctx.cluster.primaries().map((p) => p.port);
    // One command per primary: each node's client connects on first use, or already has.
    for (const port of ports) {
      const key = Array.from({ length: 200 }, (_, i) => `ev:${i}`).find((k) =>
        ctx.cluster.ownerOf(keySlot(k)) === port
      )!;
      await redis.send(["GET", key]);
    }
    for (const port of ports) {
      const mine = events.filter((e) => e.server === `127.0.0.1:${port}`).map((e) => e.type);
      assert.ok(mine.includes("connect") && mine.includes("ready"), `${port}: ${mine.join(",")}`);
    }
  } finally {
    redis.destroy();
  }
});

routing(
  "keySlot() agrees with the server's CLUSTER KEYSLOT on random keys, tags and bytes included",
  async ({ redis }) => {
    let seed = 42;
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) >>> 0) % n);
    const alphabet = ["a", "b", "{", "}", "z", "0", "é", "日", "😀", ":", " "];
    for (let i = 0; i < 300; i++) {
      let key = "";
      for (let j = rnd(12); j >= 0; j--) key += alphabet[rnd(alphabet.length)];
      assert.is(await redis.send(["CLUSTER", "KEYSLOT", key]), keySlot(key), JSON.stringify(key));
    }
    for (let i = 0; i < 100; i++) {
      const bytes = Uint8Array.from({ length: rnd(10) + 1 }, () => (rnd(4) === 0 ? 0x7b + rnd(3) : rnd(256)));
      assert.is(await redis.send(["CLUSTER", "KEYSLOT", bytes]), keySlot(bytes), `bytes ${bytes.join(",")}`);
    }
  },
);

routing("keys in different slots are refused with CrossSlotError before anything is sent", async (ctx) => {
  const { redis, cluster } = ctx;
  const calls = async () => {
    let n = 0;
    for (const p of cluster.primaries()) {
      const info = String(await (await admin(ctx, p.port)).send(["INFO", "commandstats"]));
      for (const cmd of ["mget", "del", "eval", "mset"]) {
        n += Number(/calls=(\d+)/.exec(info.split(`cmdstat_${cmd}:`)[1] ?? "")?.[1] ?? 0);
      }
    }
    return n;
  };
  const before = await calls();
  const e = await rejects(
    () => redis.send(["MGET", "a", "b"]),
    CrossSlotError,
    `Cannot send MGET: its keys hash to different slots ("a" -> 15495, "b" -> 3300); give keys used together a shared {hash tag}`,
  );
  assert.ok(isCrossSlotError(e));
  assert.is((e as CrossSlotError).code, "CROSSSLOT");
  assert.equal((e as CrossSlotError).keys, ["a", "b"]);
  assert.equal((e as CrossSlotError).slots, [15495, 3300]);
  await rejects(
    () => redis.send(["DEL", "x", "x", "y"]),
    CrossSlotError,
    `Cannot send DEL: its keys hash to different slots ("x" -> 16287, "y" -> 12222); give keys used together a shared {hash tag}`,
  );
  await rejects(
    () => redis.send(["MSET", "{t}a", 1, "b", 2]),
    CrossSlotError,
    `Cannot send MSET: its keys hash to different slots ("{t}a" -> 15891, "b" -> 3300); give keys used together a shared {hash tag}`,
  );
  await rejects(
    () => new Script("return 1").run(redis, ["k1", "k2"], []),
    CrossSlotError,
    `Cannot send EVAL: its keys hash to different slots ("k1" -> 12706, "k2" -> 449); give keys used together a shared {hash tag}`,
  );
  await rejects(
    () => redis.send(["MULTI"]),
    TypeError,
    "Cannot send MULTI through a ClusterClient: transactions need a dedicated connection to one node, which a ClusterClient does not offer (use a Lua script)",
  );
  assert.is(await calls(), before, "nothing reached any node");
  // One hash tag, one slot: fine.
  assert.is(await redis.send(["MSET", "{t}a", 1, "{t}b", 2]), "OK");
  assert.equal(await redis.send(["MGET", "{t}a", "{t}b"]), ["1", "2"]);
});

routing("keyless commands go to any node; PUBLISH reaches a subscriber on another node", async ({ redis, cluster }) => {
  assert.is(await redis.send(["PING"]), "PONG");
  assert.is(await redis.send(["ECHO", "hi"]), "hi");
  const got: Reply[][] = [];
  const stop = redis.onPush((push) => got.push(push));
  try {
    assert.equal(await redis.send(["SUBSCRIBE", "cluster-news"]), ["subscribe", "cluster-news", 1]);
    // Publish from every node directly: classic pub/sub is broadcast over the cluster bus.
    for (const p of cluster.primaries()) cluster.cli(p.port, "PUBLISH", "cluster-news", `from ${p.port}`);
    await until(() => got.length === cluster.primaries().length, 5000);
    assert.ok(got.every((m) => m[0] === "message" && m[1] === "cluster-news"));
    await redis.send(["PUBLISH", "cluster-news", "via the client"]);
    await until(() => got.length === cluster.primaries().length + 1, 5000);
  } finally {
    stop();
  }
});

routing("a script runs on every primary, and SCRIPT FLUSH on all of them costs callers nothing", async (ctx) => {
  const { redis, cluster } = ctx;
  const incr = new Script("return redis.call('INCR', KEYS[1])");
  const keys = cluster.primaries().flatMap((p) => [0, 1, 2].map((i) => `{${tagOwnedBy(cluster, p.port, "s")}}:${i}`));
  for (let round = 1; round <= 4; round++) {
    assert.equal(await Promise.all(keys.map((k) => incr.run(redis, [k], []))), keys.map(() => round));
    for (const p of cluster.primaries()) await (await admin(ctx, p.port)).send(["SCRIPT", "FLUSH"]);
  }
});

routing("generation rises when a node connection is replaced, so Script resends its body", async (ctx) => {
  const { redis, cluster } = ctx;
  const before = redis.generation;
  const port = cluster.primaries()[0]!.port;
  const a = await admin(ctx, port);
  const list = String(await a.send(["CLIENT", "LIST"]));
  const ids = list.split("\n").filter((l) => l.includes("name=herdless-cluster-test") && l.includes("sub=0")).map((l) =>
    /id=(\d+)/.exec(l)![1]!
  );
  assert.ok(ids.length >= 1, "the cluster client's connection to that node is found by name");
  for (const id of ids) await a.send(["CLIENT", "KILL", "ID", id]);
  await until(
    async () =>
      redis.generation > before &&
      (await redis.send(["GET", `{${tagOwnedBy(cluster, port, "g")}}`]).then(() => true, () => false)),
    5000,
  );
  const echo = new Script("return ARGV[1]");
  assert.is(await echo.run(redis, [`{${tagOwnedBy(cluster, port, "g")}}`], ["x"]), "x");
});

const migration = suite<Ctx>("ClusterClient: slot migration");
shared.use(migration);

migration(
  "MOVED after the slot map changed behind the client's back: the map is updated and the command retried",
  async (ctx) => {
    const { redis, cluster } = ctx;
    const [a, b] = cluster.primaries();
    const tag = tagOwnedBy(cluster, a!.port, "moved");
    const key = `{${tag}}:k`;
    const slot = keySlot(key);
    await redis.send(["SET", key, "v1"]);
    assert.is(redis.nodeFor(key), `127.0.0.1:${a!.port}`);
    await beginMigration(ctx, slot, a!.port, b!.port);
    while ((await moveKeys(ctx, slot, a!.port, b!.port, 100)) > 0);
    await endMigration(ctx, slot, a!.port, b!.port);
    const moved = redis.stats().moved;
    assert.is(await redis.send(["GET", key]), "v1");
    assert.ok(redis.stats().moved > moved, "a MOVED was followed");
    assert.is(redis.nodeFor(key), `127.0.0.1:${b!.port}`, "the map now names the new owner");
    assert.is(await redis.send(["GET", key]), "v1");
  },
);

migration(
  "ASK during a migration: migrated keys are read on the importing node, new keys created there",
  async (ctx) => {
    const { redis, cluster } = ctx;
    const [a, b] = cluster.primaries();
    const tag = tagOwnedBy(cluster, a!.port, "ask");
    const slot = keySlot(tag);
    const keys = Array.from({ length: 10 }, (_, i) => `{${tag}}:${i}`);
    await Promise.all(keys.map((k, i) => redis.send(["SET", k, `v${i}`])));
    await beginMigration(ctx, slot, a!.port, b!.port);
    try {
      await moveKeys(ctx, slot, a!.port, b!.port, 5);
      const asked = redis.stats().asked;
      assert.equal(await Promise.all(keys.map((k) => redis.send(["GET", k]))), keys.map((_, i) => `v${i}`));
      assert.is(redis.stats().asked - asked, 5, "one ASK per migrated key");
      assert.is(redis.nodeFor(keys[0]!), `127.0.0.1:${a!.port}`, "ASK does not change the map");
      // A key the source does not have is created on the importing node.
      assert.is(await redis.send(["SET", `{${tag}}:new`, "n"]), "OK");
      // (Asked directly, the importing node would answer MOVED: it serves the slot only after ASKING.)
      assert.ok(
        ((await (await admin(ctx, b!.port)).send(["CLUSTER", "GETKEYSINSLOT", slot, 100])) as string[]).includes(
          `{${tag}}:new`,
        ),
      );
      // A script declared on a migrated key follows ASK too (and loads on the importing node).
      assert.is(await new Script("return redis.call('GET', KEYS[1])").run(redis, [keys[0]!], []), "v0");
    } finally {
      while ((await moveKeys(ctx, slot, a!.port, b!.port, 100)) > 0);
      await endMigration(ctx, slot, a!.port, b!.port);
    }
    assert.equal(await Promise.all(keys.map((k) => redis.send(["GET", k]))), keys.map((_, i) => `v${i}`));
  },
);

migration(
  "a slot migrated key by key under steady load surfaces no error, and every INCR counts exactly once",
  async (ctx) => {
    const { redis, cluster } = ctx;
    const [a, , c] = cluster.primaries();
    const tag = tagOwnedBy(cluster, c!.port, "load");
    const slot = keySlot(tag);
    const counters = Array.from({ length: 40 }, (_, i) => `{${tag}}:n${i}`);
    const others = Array.from({ length: 40 }, (_, i) => `other:n${i}`);
    const expected = new Map<string, number>();
    await Promise.all(counters.map((k) => redis.send(["SET", k, 0])));
    const incr = new Script("return redis.call('INCR', KEYS[1])");
    let done = false;
    const loaded = load(16, async (w, i) => {
      const own = i % 2 === 0 ? counters : others;
      const key = own[(w * 7 + i) % own.length]!;
      switch (i % 4) {
        case 0:
          await redis.send(["INCR", key]);
          break;
        case 1:
          await incr.run(redis, [key], []);
          break;
        case 2: // multi-key on the migrating slot: TRYAGAIN while its keys are split
          await redis.send(["MGET", counters[i % 40]!, counters[(i + 1) % 40]!]);
          return;
        default:
          await redis.send(["GET", key]);
          return;
      }
      expected.set(key, (expected.get(key) ?? 0) + 1);
    }, () => done);
    const stats = redis.stats();
    await beginMigration(ctx, slot, c!.port, a!.port);
    while ((await moveKeys(ctx, slot, c!.port, a!.port, 3)) > 0) await sleep(20);
    await endMigration(ctx, slot, c!.port, a!.port);
    await sleep(200);
    done = true;
    const { ok, errors } = await loaded;
    assert.is(errors.length, 0, `no caller saw an error (${summary(errors)})`);
    assert.ok(ok > 100, `steady load ran (${ok} calls)`);
    const after = redis.stats();
    assert.ok(after.asked > stats.asked, "ASK was followed during the migration");
    assert.ok(after.moved > stats.moved, "MOVED was followed once the slot changed owner");
    for (const [key, n] of expected) {
      assert.is(Number(await redis.send(["GET", key])), n, `${key}: every acknowledged INCR ran once`);
    }
    assert.is(await (await admin(ctx, a!.port)).send(["CLUSTER", "COUNTKEYSINSLOT", slot]), counters.length);
  },
);

const lifecycle = suite<Ctx>("ClusterClient: limits and lifecycle");
shared.use(lifecycle);

lifecycle(
  "TRYAGAIN while a multi-key command's keys are split by a migration: retried until the slot settles",
  async (ctx) => {
    const { redis, cluster } = ctx;
    const [a, b] = cluster.primaries();
    const tag = tagOwnedBy(cluster, a!.port, "try");
    const slot = keySlot(tag);
    const keys = Array.from({ length: 6 }, (_, i) => `{${tag}}:${i}`);
    await Promise.all(keys.map((k, i) => redis.send(["SET", k, `v${i}`])));
    await beginMigration(ctx, slot, a!.port, b!.port);
    const retried = redis.stats().retried;
    let pending: Promise<Reply> | undefined;
    try {
      await moveKeys(ctx, slot, a!.port, b!.port, 3);
      pending = redis.send(["MGET", ...keys]);
      await until(() => redis.stats().retried > retried, 5000, 5);
    } finally {
      while ((await moveKeys(ctx, slot, a!.port, b!.port, 100)) > 0);
      await endMigration(ctx, slot, a!.port, b!.port);
    }
    assert.equal(await pending, keys.map((_, i) => `v${i}`), "the MGET succeeded once every key had moved");
  },
);

lifecycle("a redirection loop ends after maxRedirections with the last redirection as the error", async (ctx) => {
  const { cluster } = ctx;
  const [a, b] = cluster.primaries();
  const tag = tagOwnedBy(cluster, a!.port, "loop");
  const slot = keySlot(tag);
  // MIGRATING without IMPORTING on the other side: the owner says ASK, the
  // target (not importing) says MOVED back, forever.
  await (await admin(ctx, a!.port)).send(["CLUSTER", "SETSLOT", slot, "MIGRATING", cluster.id(b!.port)]);
  const client = await connectCluster({ seeds: cluster.seeds, maxRedirections: 4 });
  try {
    const e = await rejects(
      () => client.send(["GET", `{${tag}}:missing`]),
      RedisReplyError,
      /^ASK \d+ 127\.0\.0\.1:\d+ \(gave up after 4 redirections: maxRedirections\)$/,
    );
    // ASK, MOVED, ASK, MOVED followed; the fifth (an ASK) is returned.
    assert.is((e as RedisReplyError).code, "ASK");
    assert.equal([client.stats().asked, client.stats().moved], [2, 2]);
    assert.is(client.stats().redirections, 4, "redirections counts both kinds");
    // Every redirection after the first sent it back to a node that had
    // already refused it: each waited retryDelayMs instead of bouncing at once.
    assert.is(client.stats().bounced, 3);
  } finally {
    client.destroy();
    await (await admin(ctx, a!.port)).send(["CLUSTER", "SETSLOT", slot, "STABLE"]);
  }
});

lifecycle(
  "close() waits for commands being redirected, then refuses new ones; destroy() fails what is left",
  async (ctx) => {
    const { cluster } = ctx;
    const [a, b] = cluster.primaries();
    const tag = tagOwnedBy(cluster, a!.port, "close");
    const slot = keySlot(tag);
    const keys = Array.from({ length: 20 }, (_, i) => `{${tag}}:${i}`);
    const client = await connectCluster({ seeds: cluster.seeds });
    await Promise.all(keys.map((k) => client.send(["SET", k, k])));
    await beginMigration(ctx, slot, a!.port, b!.port);
    try {
      await moveKeys(ctx, slot, a!.port, b!.port, 10);
      const asked = client.stats().asked;
      const gets = keys.map((k) => client.send(["GET", k]));
      assert.is(client.pending, keys.length);
      const closed = client.close();
      await rejects(() => client.send(["PING"]), ConnectionError, "The cluster client is closed");
      assert.equal(await Promise.all(gets), keys, "every command issued before close() got its reply");
      await closed;
      assert.is(client.pending, 0);
      assert.ok(client.stats().asked > asked, "some of them were redirected while closing");
    } finally {
      while ((await moveKeys(ctx, slot, a!.port, b!.port, 100)) > 0);
      await endMigration(ctx, slot, a!.port, b!.port);
    }
    const other = await connectCluster({ seeds: cluster.seeds });
    const inflight = Array.from(
      { length: 50 },
      (_, i) => other.send(["GET", `k${i}`]).then(() => "ok", (e: unknown) => e),
    );
    other.destroy();
    const outcomes = await Promise.all(inflight);
    assert.ok(
      outcomes.every((o) => o === "ok" || isConnectionError(o)),
      "destroy(): each command either completed or failed with ConnectionError",
    );
    await rejects(
      () => other.send(["PING"]),
      ConnectionError,
      "The cluster client is closed",
    );
  },
);

lifecycle("a bad command is refused like RedisClient refuses it", async ({ redis }) => {
  await rejects(() => redis.send([] as Arg[]), TypeError, "Cannot send: 'command' must be a non-empty array");
  await rejects(
    () => redis.send(["GET", null as unknown as string]),
    TypeError,
    "Cannot send: argument 1 must be a string, finite number or Uint8Array, got null",
  );
  await rejects(
    () => redis.send(["SSUBSCRIBE", "x"]),
    TypeError,
    "Cannot send SSUBSCRIBE through a ClusterClient: sharded pub/sub needs a subscriber connection per shard, which a ClusterClient does not offer (use SUBSCRIBE)",
  );
});

const failover = suite<Ctx>("ClusterClient: failover");
shared.use(failover, { last: true });

failover(
  "a manual failover (CLUSTER FAILOVER on a replica) under load: bounded errors, nothing ran twice, service resumes",
  async (ctx) => {
    const { redis, cluster } = ctx;
    const primary = cluster.primaries()[1]!;
    const replica = await cluster.replicaOf(primary.port);
    const keys = cluster.primaries().flatMap((p) =>
      [0, 1, 2, 3].map((i) => `{${tagOwnedBy(cluster, p.port, "fo")}}:${i}`)
    );
    await Promise.all(keys.map((k) => redis.send(["SET", k, 0])));
    const acked = new Map<string, number>();
    const workers = 12;
    let done = false;
    const loaded = load(workers, async (w, i) => {
      const key = keys[(w + i) % keys.length]!;
      await redis.send(["INCR", key]);
      acked.set(key, (acked.get(key) ?? 0) + 1);
    }, () => done);
    await sleep(100);
    await cluster.failover(replica);
    await cluster.waitHealthy();
    await sleep(200);
    done = true;
    const { ok, errors } = await loaded;
    assert.ok(
      errors.length <= workers,
      `at most one error per in-flight caller (${errors.length}: ${summary(errors)})`,
    );
    assert.ok(errors.every(isConnectionError), summary(errors));
    assert.ok(ok > 100, `load ran (${ok})`);
    let total = 0;
    for (const k of keys) {
      const v = Number(await redis.send(["GET", k]));
      assert.ok(v >= (acked.get(k) ?? 0), `${k}: no acknowledged INCR was lost in a coordinated failover`);
      total += v;
    }
    assert.ok(total <= ok + errors.length, "nothing ran twice");
    assert.is(redis.nodeFor(keys[4]!), `127.0.0.1:${replica}`, "the map names the promoted replica");
    // Service resumed: a full round over every slot owner succeeds.
    assert.equal(await Promise.all(keys.map((k) => redis.send(["EXISTS", k]))), keys.map(() => 1));
  },
);

failover("pub/sub survives the loss of the subscriber's node: the subscription moves to a live node", async (ctx) => {
  const { redis, cluster } = ctx;
  const got: Reply[][] = [];
  const stopPush = redis.onPush((p) => got.push(p));
  try {
    await redis.send(["SUBSCRIBE", "after-kill"]);
    let host: number | undefined;
    for (const n of cluster.nodes) {
      const list = String(await (await admin(ctx, n.port)).send(["CLIENT", "LIST"]));
      if (list.split("\n").some((l) => l.includes("name=herdless-cluster-test") && /\bsub=[1-9]/.test(l))) {
        host = n.port;
      }
    }
    assert.ok(host !== undefined, "the subscriber's node was found");
    const server = cluster.nodes.find((n) => n.port === host)!;
    ctx.admins.get(host)?.destroy();
    ctx.admins.delete(host);
    const wasPrimary = cluster.primaries().some((p) => p.port === host);
    const witness = cluster.nodes.find((n) => n.port !== host)!.port;
    await server.kill();
    try {
      await until(
        async () => {
          await redis.send(["PUBLISH", "after-kill", "hello"], { timeoutMs: 1000 }).catch(() => {});
          return got.some((m) => m[1] === "after-kill");
        },
        15_000,
        100,
      );
      // Restart it only once the cluster has failed it over: a primary back
      // before that would return empty (no persistence) and its replica
      // would resync to the empty data set.
      await until(
        async () => {
          const view = await nodesVia(ctx, witness);
          const self = view.find((n) => n.port === host);
          return self !== undefined && self.failed && (!wasPrimary || self.slots.length === 0);
        },
        15_000,
        50,
      );
    } finally {
      await server.restart();
      await cluster.waitHealthy();
    }
  } finally {
    stopPush();
  }
});

failover(
  "a primary SIGKILLed under load: bounded ConnectionErrors, other slots keep working, the replica takes over",
  async (ctx) => {
    const { redis, cluster } = ctx;
    const victim = cluster.primaries()[2]!.port;
    const replica = await cluster.replicaOf(victim);
    const server = cluster.nodes.find((n) => n.port === victim)!;
    const keys = cluster.primaries().flatMap((p) =>
      [0, 1, 2, 3].map((i) => `{${tagOwnedBy(cluster, p.port, "kill")}}:${i}`)
    );
    const victimKey = keys.find((k) => cluster.ownerOf(keySlot(k)) === victim)!;
    const liveKeys = keys.filter((k) => cluster.ownerOf(keySlot(k)) !== victim);
    await Promise.all(keys.map((k) => redis.send(["SET", k, 0])));
    // Clients that may not wait for the node: one with no offline queue, one with a short offline budget.
    const strict = await connectCluster({ seeds: cluster.seeds, offlineQueue: false });
    const brief = await connectCluster({ seeds: cluster.seeds, offlineTimeoutMs: 200 });
    const workers = 12;
    let done = false;
    const loaded = load(workers, (w, i) => redis.send(["INCR", keys[(w + i) % keys.length]!]), () => done);
    const retried = redis.stats().retried;
    await sleep(100);
    ctx.admins.get(victim)?.destroy();
    ctx.admins.delete(victim);
    await server.kill();
    let live: Promise<{ ok: number; errors: unknown[] }> | undefined;
    try {
      // Until the node is seen gone a command may still be written to it (and
      // fail as lost); after that each client's own waiting rule applies.
      const expect = (send: () => Promise<unknown>, check: (e: unknown) => boolean) =>
        until(() => send().then(() => false, (e: unknown) => check(e)), 5000, 1);
      await expect(() => strict.send(["GET", victimKey]), (e) =>
        isConnectionError(e) &&
        /No node can serve GET \(slot \d+\) now \(offlineQueue is off\)/.test((e as Error).message));
      await expect(() => brief.send(["GET", victimKey]), (e) =>
        isConnectionError(e) &&
        /No node could serve GET \(slot \d+\) for \d+ ms \(offlineTimeoutMs\)/.test((e as Error).message));
      await expect(
        () => redis.send(["GET", victimKey], { timeoutMs: 50 }),
        (e) =>
          e instanceof TimeoutError && e.message === "Command GET timed out: 'timeoutMs' of 50 ms ran out" &&
          e.setting === "timeoutMs" && e.timeoutMs === 50 && e.waitedMs >= 50,
      );
      // Slots on the surviving primaries stay served; CLUSTERDOWN while the cluster votes is waited out.
      let failedOver = false;
      live = load(2, (w, i) => redis.send(["GET", liveKeys[(w + i) % liveKeys.length]!]), () => failedOver);
      await until(
        async () => (await nodesVia(ctx, replica)).some((n) => n.myself && n.role === "master"),
        15_000,
        50,
      );
      await until(() => redis.send(["GET", victimKey], { timeoutMs: 1000 }).then(() => true, () => false), 10_000, 50);
      failedOver = true;
    } finally {
      done = true;
      strict.destroy();
      brief.destroy();
    }
    const { ok, errors } = await loaded;
    const during = await live;
    assert.equal(during?.errors, [], `no command on a surviving slot failed: ${summary(during?.errors ?? [])}`);
    assert.ok(
      errors.length <= workers,
      `at most one error per in-flight caller (${errors.length}: ${summary(errors)})`,
    );
    assert.ok(errors.every(isConnectionError), summary(errors));
    assert.ok(ok > 100, `load ran (${ok})`);
    assert.ok(redis.stats().retried > retried, "commands waited for the failover");
    let total = 0;
    for (const k of keys) total += Number(await redis.send(["GET", k]));
    // Writes the dead primary acknowledged but had not replicated may be lost
    // (Redis replicates asynchronously); none may have run twice.
    assert.ok(total <= ok + errors.length, `nothing ran twice (${total} <= ${ok} + ${errors.length})`);
    assert.is(redis.nodeFor(victimKey), `127.0.0.1:${replica}`);
    // The old primary comes back as a replica of the new one.
    await server.restart();
    await cluster.waitHealthy();
    // Every key's slot is served again. Whether its value survived is Redis'
    // business, not the client's: a primary restarted empty (no persistence)
    // can, on a busy machine, be resynced from before the cluster settles (seen
    // once under Bun), which is the data loss docs/cluster.md warns about.
    const unserved = [];
    for (const k of keys) {
      const reply = await redis.send(["GET", k], { timeoutMs: 5000 }).then(() => undefined, (e: unknown) => e);
      if (reply !== undefined) unserved.push(`${k} (slot ${keySlot(k)}, ${redis.nodeFor(k)}): ${String(reply)}`);
    }
    assert.equal(unserved, [], "every key is served after the old primary rejoined");
  },
);

routing.run();
migration.run();
lifecycle.run();
failover.run();
