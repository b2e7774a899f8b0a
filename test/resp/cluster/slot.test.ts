import { suite } from "uvu";
import * as assert from "uvu/assert";
import { commandKeys, routeSlot } from "../../../resp/cluster/command_keys.ts";
import { crc16 } from "../../../resp/cluster/crc16.ts";
import { parseEndpoint, parseShards, parseSlots } from "../../../resp/cluster/slot_map.ts";
import { CrossSlotError, isCrossSlotError, keySlot } from "../../../resp/cluster/slot.ts";
import type { Arg, Reply } from "../../../resp/types.ts";
import { rejects } from "../../support/assert.ts";

const enc = new TextEncoder();

const slots = suite("keySlot()");

slots("CRC16/XMODEM of the standard check string is 0x31C3", () => {
  assert.is(crc16(enc.encode("123456789")), 0x31c3);
});

slots("matches the slots the Redis documentation and server give", () => {
  assert.is(keySlot("foo"), 12182);
  assert.is(keySlot("bar"), 5061);
  assert.is(keySlot("hello"), 866);
  assert.is(keySlot(""), 0);
  assert.is(keySlot("user1000"), 3443);
});

slots("hashes only a non-empty hash tag: the first { and the first } after it", () => {
  const tag = keySlot("user1000");
  assert.is(keySlot("{user1000}.following"), tag);
  assert.is(keySlot("{user1000}.followers"), tag);
  assert.is(keySlot("foo{user1000}bar{zap}"), tag);
  assert.is(keySlot("foo{{bar}}zap"), keySlot("{bar"), "the tag starts after the first {");
  assert.is(keySlot("foo{bar}{zap}"), keySlot("bar"));
  assert.is.not(keySlot("foo{}{bar}"), keySlot("bar"), "an empty tag hashes the whole key");
  assert.is(keySlot("foo{}{bar}"), crc16(enc.encode("foo{}{bar}")) & 16383);
  assert.is(keySlot("{}"), crc16(enc.encode("{}")) & 16383);
  assert.is(keySlot("abc}{def"), crc16(enc.encode("abc}{def")) & 16383, "a } before the { is no tag");
  assert.is(keySlot("{unclosed"), crc16(enc.encode("{unclosed")) & 16383);
});

slots("a string, its UTF-8 bytes and a number's decimal text share a slot", () => {
  for (const key of ["ascii", "héllo wörld", "日本{語}x", "emoji 😀", "{€}a"]) {
    assert.is(keySlot(enc.encode(key)), keySlot(key), key);
  }
  assert.is(keySlot(12345), keySlot("12345"));
  assert.is(
    keySlot(new Uint8Array([0xff, 0x7b, 0x00, 0x7d, 0xfe])),
    crc16(new Uint8Array([0x00])) & 16383,
    "binary tag",
  );
});

slots("keySlot() refuses a value that is not a key", async () => {
  await rejects(
    () => keySlot(null as unknown as string),
    TypeError,
    "Cannot compute keySlot: 'key' must be a string, number or Uint8Array, got object",
  );
});

const keys = suite("commandKeys()");

keys("finds the keys of the commands herdless and common callers use", () => {
  const cases: [Arg[], Arg[] | undefined][] = [
    [["GET", "k"], ["k"]],
    [["set", "k", "v", "PX", 100], ["k"]],
    [["PTTL", "k"], ["k"]],
    [["PEXPIRE", "k", 10], ["k"]],
    [["INCR", "k"], ["k"]],
    [["MGET", "a", "b", "c"], ["a", "b", "c"]],
    [["DEL", "a", "b"], ["a", "b"]],
    [["MSET", "a", 1, "b", 2], ["a", "b"]],
    [["EVAL", "return 1", 2, "a", "b", "arg"], ["a", "b"]],
    [["EVALSHA", "abc", "1", "a", "arg"], ["a"]],
    [["EVAL", "return 1", 0, "arg"], undefined],
    [["EVAL", "return 1", 5, "a"], undefined], // a bad count is the server's to refuse
    [["FCALL", "f", 1, "a"], ["a"]],
    [["BLPOP", "a", "b", 0], ["a", "b"]],
    [["ZUNIONSTORE", "dest", 2, "a", "b", "WEIGHTS", 1, 2], ["dest", "a", "b"]],
    [["ZINTER", 2, "a", "b"], ["a", "b"]],
    [["RENAME", "a", "b"], ["a", "b"]],
    [["XREAD", "COUNT", 2, "STREAMS", "s1", "s2", "0", "0"], ["s1", "s2"]],
    [["OBJECT", "ENCODING", "k"], ["k"]],
    [["MEMORY", "USAGE", "k"], ["k"]],
    [["HSET", "h", "f", "v"], ["h"]],
    [["SOMEFUTURECOMMAND", "k", "x"], ["k"]],
    [["PING"], undefined],
    [["PING", "hello"], undefined],
    [["PUBLISH", "ch", "m"], undefined],
    [["SUBSCRIBE", "a", "b"], undefined],
    [["CLUSTER", "KEYSLOT", "x"], undefined],
    [["SCRIPT", "FLUSH"], undefined],
    [["HELLO"], undefined],
    [["SPUBLISH", "ch", "m"], ["ch"]],
  ];
  for (const [command, expected] of cases) assert.equal(commandKeys(command), expected, command.join(" "));
});

keys("refuses transactions and sharded subscriptions, which need a connection of their own", async () => {
  const transactions = "transactions need a dedicated connection to one node, which a ClusterClient does not offer" +
    " (use a Lua script)";
  await rejects(() => commandKeys(["MULTI"]), TypeError, `Cannot send MULTI through a ClusterClient: ${transactions}`);
  await rejects(
    () => commandKeys(["watch", "k"]),
    TypeError,
    `Cannot send WATCH through a ClusterClient: ${transactions}`,
  );
  await rejects(
    () => commandKeys(["SSUBSCRIBE", "ch"]),
    TypeError,
    "Cannot send SSUBSCRIBE through a ClusterClient: sharded pub/sub needs a subscriber connection per shard, " +
      "which a ClusterClient does not offer (use SUBSCRIBE)",
  );
});

keys("routeSlot() gives the one slot of a command's keys, -1 for a keyless one, and refuses keys in two slots", () => {
  assert.is(routeSlot(["GET", "foo"]), 12182);
  assert.is(routeSlot(["MGET", "{t}a", "{t}b"]), keySlot("t"));
  assert.is(routeSlot(["PING"]), -1);
  assert.is(routeSlot(["GET", null as unknown as string]), -1, "a bad key is left for the client to refuse");
  const e = (() => {
    try {
      routeSlot(["MSET", "a", 1, "b", 2]);
    } catch (error) {
      return error;
    }
  })();
  assert.ok(e instanceof CrossSlotError && isCrossSlotError(e));
  assert.is(
    (e as CrossSlotError).message,
    `Cannot send MSET: its keys hash to different slots ("a" -> 15495, "b" -> 3300); give keys used together a shared {hash tag}`,
  );
  const long = "k".repeat(50);
  assert.match(
    String((() => {
      try {
        routeSlot(["DEL", long, new Uint8Array([1, 2, 3])]);
      } catch (error) {
        return (error as Error).message;
      }
    })()),
    /"k{40}\.\.\." -> \d+, <3 bytes> -> \d+/,
  );
});

const maps = suite("slot map parsing");

maps("parseShards() reads RESP2 pairs and RESP3 maps, picks the primary, skips unknown endpoints", () => {
  const node = (
    port: number,
    role: string,
    extra: Reply[] = [],
  ): Reply[] => [
    "id",
    `id${port}`,
    "port",
    port,
    "ip",
    "10.0.0.1",
    "endpoint",
    "10.0.0.1",
    "role",
    role,
    "health",
    "online",
    ...extra,
  ];
  const resp2: Reply = [
    ["slots", [0, 99, 200, 299], "nodes", [node(7001, "replica"), node(7000, "master")]],
    ["slots", [100, 199], "nodes", [["id", "x", "port", 7002, "ip", "", "endpoint", "", "role", "master"]]],
    ["slots", [300, 399], "nodes", [["id", "y", "port", 7003, "ip", "10.0.0.3", "endpoint", "?", "role", "master"]]],
  ];
  const t = parseShards(resp2, "seed.local", false);
  assert.is(t.owners[0], "10.0.0.1:7000");
  assert.is(t.owners[250], "10.0.0.1:7000");
  assert.is(t.owners[150], "seed.local:7002", "no endpoint: the host that answered");
  assert.is(t.owners[350], undefined, "endpoint ? cannot be reached");
  assert.is(t.owners[16383], undefined);
  assert.equal(t.primaries, ["10.0.0.1:7000", "seed.local:7002"]);
  assert.ok(t.nodes.has("10.0.0.1:7001"), "replicas are known nodes");

  const m = (pairs: Reply[]) => {
    const o: Record<string, Reply> = Object.create(null);
    for (let i = 0; i < pairs.length; i += 2) o[pairs[i] as string] = pairs[i + 1]!;
    return o;
  };
  const resp3: Reply = [m(["slots", [0, 16383], "nodes", [m([...node(7000, "master"), "tls-port", 7400])]])];
  assert.is(parseShards(resp3, "h", false).owners[16383], "10.0.0.1:7000");
  assert.is(parseShards(resp3, "h", true).owners[0], "10.0.0.1:7400", "tls uses tls-port");

  // After a failover the dead primary is still listed as a master, health "fail", before or after the new one.
  const dead = node(7000, "master", ["health", "fail"]);
  const elected = node(7001, "master");
  for (const listed of [[dead, elected], [elected, dead]]) {
    const t = parseShards([["slots", [0, 16383], "nodes", listed]], "h", false);
    assert.is(t.owners[0], "10.0.0.1:7001", "the elected primary owns the slots, not the failed one");
    assert.equal(t.primaries, ["10.0.0.1:7001"]);
    assert.ok(t.nodes.has("10.0.0.1:7000"), "the failed one is still a known node");
  }
});

maps("parseEndpoint() reads MOVED/ASK targets: IPv4, IPv6, no host (the node that answered)", () => {
  assert.equal(parseEndpoint("10.0.0.1:7000", "x"), { id: "10.0.0.1:7000", host: "10.0.0.1", port: 7000 });
  assert.equal(parseEndpoint("::1:7000", "x"), { id: "::1:7000", host: "::1", port: 7000 });
  assert.equal(parseEndpoint(":7000", "seed"), { id: "seed:7000", host: "seed", port: 7000 });
  assert.is(parseEndpoint("nocolon", "x"), undefined);
  assert.is(parseEndpoint("h:0", "x"), undefined);
  assert.is(parseEndpoint("h:99999", "x"), undefined);
});

maps("parseSlots() reads the CLUSTER SLOTS shape of older servers", () => {
  const t = parseSlots(
    [[0, 8191, ["", 7000, "a"], ["127.0.0.1", 7003, "d"]], [8192, 16383, ["127.0.0.2", 7001, "b"]]],
    "127.0.0.1",
  );
  assert.is(t.owners[0], "127.0.0.1:7000");
  assert.is(t.owners[16383], "127.0.0.2:7001");
  assert.equal(t.primaries, ["127.0.0.1:7000", "127.0.0.2:7001"]);
  assert.ok(t.nodes.has("127.0.0.1:7003"));
});

slots.run();
keys.run();
maps.run();
