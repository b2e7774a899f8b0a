/**
 * A hostile or broken sentinel: its word is checked before it is used. The
 * sentinels here are fake (raw TCP speaking RESP3, answering what a test
 * chooses); the data node they name is a real redis-server, so the client's
 * own checks of the master (ROLE) run for real.
 */
import { Buffer } from "node:buffer";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { ConnectionError } from "../../../resp/errors.ts";
import { connectSentinel } from "../../../resp/sentinel/mod.ts";
import { MAX_LEARNED_SENTINELS } from "../../../resp/sentinel/sentinels.ts";
import { rejects } from "../../support/assert.ts";
import { type FakeServer, startFakeServer } from "../../support/fake_server.ts";
import { useRedis } from "../../support/fixture.ts";
import type { RedisServer } from "../../support/redis_server.ts";
import { until } from "../../support/wait.ts";

const bulk = (s: string) => `$${Buffer.byteLength(s)}\r\n${s}\r\n`;
const array = (...items: string[]) => `*${items.length}\r\n${items.join("")}`;
const map = (fields: Record<string, string>) =>
  `%${Object.keys(fields).length}\r\n${Object.entries(fields).map(([k, v]) => bulk(k) + bulk(v)).join("")}`;

interface FakeSentinel {
  /** The reply to SENTINEL GET-MASTER-ADDR-BY-NAME, as RESP. */
  master: string;
  /** The reply to SENTINEL SENTINELS, as RESP. */
  sentinels?: string;
  /** Pushed right after the SUBSCRIBE confirmation. */
  afterSubscribe?: string;
}

/** A sentinel that answers HELLO, PING, SUBSCRIBE and the two questions as `s` says. */
function startFakeSentinel(s: FakeSentinel): Promise<FakeServer> {
  return startFakeServer((command) => {
    const verb = command[0]!.toUpperCase();
    if (verb === "HELLO") return { write: map({ server: "redis", proto: "3", mode: "sentinel" }) };
    if (verb === "SUBSCRIBE") {
      return { write: `>3\r\n${bulk("subscribe")}${bulk(command[1]!)}:1\r\n${s.afterSubscribe ?? ""}` };
    }
    if (verb === "SENTINEL" && command[1]!.toUpperCase() === "GET-MASTER-ADDR-BY-NAME") return { write: s.master };
    if (verb === "SENTINEL" && command[1]!.toUpperCase() === "SENTINELS") return { write: s.sentinels ?? "*0\r\n" };
    return { write: "+PONG\r\n" };
  });
}

const hostile = suite<{ server: RedisServer; fakes: FakeServer[] }>("connectSentinel() and a sentinel's word");
useRedis(hostile, { clients: 0 });
hostile.before.each((ctx) => {
  ctx.fakes = [];
});
hostile.after.each(async (ctx) => {
  await Promise.all(ctx.fakes.map((f) => f.close()));
});

async function fake(ctx: { fakes: FakeServer[] }, s: FakeSentinel): Promise<FakeServer> {
  const f = await startFakeSentinel(s);
  ctx.fakes.push(f);
  return f;
}

hostile(
  "a master named with a port out of range is that sentinel's failure: the next sentinel is asked",
  async (ctx) => {
    const bad = await fake(ctx, { master: array(bulk("127.0.0.1"), bulk("70000")) });
    const good = await fake(ctx, { master: array(bulk("127.0.0.1"), bulk(String(ctx.server.port))) });
    const redis = await connectSentinel({ sentinels: [bad.url, good.url], name: "m" });
    try {
      assert.is(redis.master, `127.0.0.1:${ctx.server.port}`);
      assert.ok(bad.commands.some((c) => c[1] === "GET-MASTER-ADDR-BY-NAME"), "the bad sentinel was asked first");
      assert.is(await redis.send(["PING"]), "PONG");
    } finally {
      redis.destroy();
    }
  },
);

hostile("each kind of bad answer is a ConnectionError naming it, never a RangeError", async (ctx) => {
  const cases: [string, string][] = [
    [array(bulk("127.0.0.1"), bulk("70000")), `with a port that is no integer in 1..65535 ("70000")`],
    [array(bulk("127.0.0.1"), bulk("0")), `with a port that is no integer in 1..65535 ("0")`],
    [array(bulk("127.0.0.1"), bulk("-1")), `with a port that is no integer in 1..65535 ("-1")`],
    [array(bulk("127.0.0.1"), bulk("63.79")), `with a port that is no integer in 1..65535 ("63.79")`],
    [array(bulk(""), bulk("6379")), `with a host that is no host name or address ("")`],
    [array(bulk("evil host"), bulk("6379")), `with a host that is no host name or address ("evil host")`],
    [array(":1\r\n", bulk("6379")), "with a host that is no host name or address (number)"],
    [array(bulk("127.0.0.1"), bulk("6379"), bulk("x")), 'it answered the master of "m" with no [ip, port] pair'],
    ["+OK\r\n", `it answered the master of "m" with no [ip, port] pair`],
  ];
  for (const [reply, why] of cases) {
    const bad = await fake(ctx, { master: reply });
    const said = why.startsWith("it ") ? why : `it named a master of "m" ${why}`;
    await rejects(
      () => connectSentinel({ sentinels: [bad.url], name: "m" }),
      ConnectionError,
      `No sentinel of "m" named its master (127.0.0.1:${bad.port}: ${said})`,
    );
  }
});

hostile("a port sent as an integer is read as one", async (ctx) => {
  const good = await fake(ctx, { master: array(bulk("127.0.0.1"), `:${ctx.server.port}\r\n`) });
  const redis = await connectSentinel({ sentinels: [good.url], name: "m" });
  try {
    assert.is(redis.master, `127.0.0.1:${ctx.server.port}`);
  } finally {
    redis.destroy();
  }
});

hostile(
  `a sentinel that lists 5,000 sentinels (repeats and nonsense among them) grows the list by ${MAX_LEARNED_SENTINELS} at most`,
  async (ctx) => {
    const entries: string[] = [];
    for (let i = 0; i < 5000; i++) {
      const port = String(20000 + (i % 2000)); // each listed 2.5 times
      entries.push(map({ name: `s${i}`, ip: "127.0.0.1", port }));
      if (i % 100 === 0) entries.push(map({ name: "bad", ip: "127.0.0.1", port: "70000" }), ":7\r\n", bulk("junk"));
    }
    const chatty = await fake(ctx, {
      master: array(bulk("127.0.0.1"), bulk(String(ctx.server.port))),
      sentinels: `*${entries.length}\r\n${entries.join("")}`,
    });
    const redis = await connectSentinel({ sentinels: [chatty.url], name: "m", checkIntervalMs: 20 });
    try {
      await until(() => redis.sentinels.length > 1);
      const known = redis.sentinels;
      assert.is(known.length, 1 + MAX_LEARNED_SENTINELS);
      assert.is(new Set(known).size, known.length, "no repeats");
      assert.ok(known.slice(1).every((s) => /^127\.0\.0\.1:2\d{4}$/.test(s)), known.join(" "));
      // Checked again and again, it stays bounded.
      const asked = chatty.commands.filter((c) => c[1] === "SENTINELS").length;
      await until(() => chatty.commands.filter((c) => c[1] === "SENTINELS").length >= asked + 3);
      assert.is(redis.sentinels.length, 1 + MAX_LEARNED_SENTINELS);
    } finally {
      redis.destroy();
    }
  },
);

hostile("a +switch-master naming no valid address is ignored: the client stays on its master", async (ctx) => {
  const message = bulk(`m 127.0.0.1 ${ctx.server.port} 127.0.0.1 99999`);
  const liar = await fake(ctx, {
    master: array(bulk("127.0.0.1"), bulk(String(ctx.server.port))),
    afterSubscribe: `>3\r\n${bulk("message")}${bulk("+switch-master")}${message}`,
  });
  const redis = await connectSentinel({ sentinels: [liar.url], name: "m", checkIntervalMs: 20 });
  try {
    // Two checks after the subscription: the second is asked only once the
    // first was answered, which came after the message on the same connection.
    const masterQuestions = () => {
      const at = liar.commands.findIndex((c) => c[0] === "SUBSCRIBE");
      return at < 0 ? 0 : liar.commands.slice(at).filter((c) => c[1] === "GET-MASTER-ADDR-BY-NAME").length;
    };
    await until(() => masterQuestions() >= 2);
    assert.is(redis.master, `127.0.0.1:${ctx.server.port}`);
    assert.is(await redis.send(["PING"]), "PONG");
    assert.ok(redis.connected);
  } finally {
    redis.destroy();
  }
});

hostile.run();
