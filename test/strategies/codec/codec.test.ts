import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Arg, SendOptions } from "../../../resp/types.ts";
import { resolveCodec } from "../../../strategies/codec/codec.ts";
import { jitter } from "../../../strategies/jitter.ts";
import { lease } from "../../../strategies/lease.ts";
import { pipeline } from "../../../strategies/pipeline/pipeline.ts";
import { swr } from "../../../strategies/swr.ts";
import { CodecError, isCodecError } from "../../../strategies/errors.ts";
import { rejects } from "../../support/assert.ts";
import { useRedis } from "../../support/fixture.ts";
import { events, origin } from "../../support/strategies.ts";

const Builtin = suite("built-in codecs");

Builtin("built-in codecs refuse what they cannot represent", async () => {
  const json = resolveCodec("json");
  await rejects(() => json.encode(10n), CodecError, "$ is a BigInt (JSON has none)");
  await rejects(() => json.encode(() => 1), CodecError, "$ is a function (JSON drops it)");
  await rejects(() => resolveCodec("string").encode(1), TypeError, "expected a string, got number");
  await rejects(() => resolveCodec("bytes").encode("x"), TypeError, "expected a Uint8Array, got string");
  await rejects(
    () => resolveCodec({ encode: 1 }),
    TypeError,
    `Cannot create pipeline: 'codec' must be "json", "string", "bytes" or an object with encode and decode functions, got object`,
  );
  assert.equal([...(resolveCodec("bytes").decode("ab") as Uint8Array)], [97, 98]);
});

Builtin.run();

const Codec = suite("codecs");
const db = useRedis(Codec, { prefix: "codec" });

Codec("json (the default) round-trips structured values", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 1000, namespace: db.ns() }, lease());
  const value = { name: "Ada", tags: ["x", "y"], n: 1.5, nested: { ok: true, none: null } };
  const o = origin(() => value);
  assert.equal(await cache.get("j", o.load), value);
  assert.equal(await cache.get("j", o.load), value);
  assert.is(o.calls, 1);
  await cache.close();
});

Codec("string stores text as is, multi-byte characters included", async () => {
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 1000, namespace: db.ns(), codec: "string" });
  assert.is(await cache.get("s", () => "héllo ✓ 𝄞"), "héllo ✓ 𝄞");
  assert.is(await cache.get("s", () => "other"), "héllo ✓ 𝄞");
  assert.match(
    String(await db.redis.send(["GET", cache.keys("s").data])),
    /^hl3;v;\d{13};1000;0;0;\d+;[\w-]{12};[\w-]{12};string;;;héllo ✓ 𝄞$/,
  );
  await cache.close();
});

Codec("bytes is binary safe (CRLF, NUL, 0xFF) and returns a copy", async () => {
  const cache = pipeline<Uint8Array>({ redis: db.redis, ttlMs: 1000, namespace: db.ns(), codec: "bytes" }, lease());
  const payload = new Uint8Array([0, 13, 10, 255, 36, 42, 13, 10, 0]);
  assert.equal([...(await cache.get("b", () => payload))], [...payload]);
  const cached = await cache.get("b", () => new Uint8Array([1]));
  assert.equal([...cached], [...payload]);
  // A view past the envelope header of the client's own copy of the value:
  // it pins that value (a few header bytes more than the payload), never a socket chunk.
  const stored = Number(await db.redis.send(["STRLEN", cache.keys("b").data]));
  assert.is(cached.buffer.byteLength, stored, "a view would pin the socket chunk");
  const again = await cache.get("b", () => new Uint8Array([1]));
  assert.is.not(again.buffer, cached.buffer, "each hit gets its own copy");
  assert.is(cache.stats().hits, 2);
  await cache.close();
});

Codec("a hit asks Redis for bytes only when the codec is binary: text is decoded once, in the client", async () => {
  const asked: (boolean | undefined)[] = [];
  const spy = {
    send(args: readonly Arg[], options?: SendOptions) {
      if (args[0] === "GET" && String(args[1]).endsWith(":data")) asked.push(options?.buffers);
      return db.redis.send(args, options);
    },
  };
  const text = pipeline({ redis: spy, ttlMs: 1000, namespace: db.ns() });
  assert.equal(await text.get("t", () => ({ ok: "é" })), { ok: "é" });
  assert.equal(await text.get("t", () => ({ ok: "no" })), { ok: "é" });
  const strings = pipeline<string>({ redis: spy, ttlMs: 1000, namespace: db.ns(), codec: "string" });
  assert.is(await strings.get("s", () => "x"), "x");
  assert.equal(asked.splice(0).map(Boolean), [false, false, false]);
  const bytes = pipeline<Uint8Array>({ redis: spy, ttlMs: 1000, namespace: db.ns(), codec: "bytes" });
  assert.equal([...await bytes.get("b", () => new Uint8Array([1, 2]))], [1, 2]);
  assert.equal([...await bytes.get("b", () => new Uint8Array([3]))], [1, 2]);
  assert.equal(asked.map(Boolean), [true, true]);
  await Promise.all([text.close(), strings.close(), bytes.close()]);
});

Codec("bytes from an adapter that returns views of a larger buffer are copied once, never pinning it", async () => {
  const adapter = {
    async send(args: readonly Arg[], options?: SendOptions) {
      const reply = await db.redis.send(args, options);
      if (!(reply instanceof Uint8Array)) return reply;
      // What ioredis' callBuffer does: a slice of the socket chunk it read.
      const chunk = new Uint8Array(4096);
      chunk.set(reply, 100);
      return chunk.subarray(100, 100 + reply.length);
    },
  };
  const cache = pipeline<Uint8Array>({ redis: adapter, ttlMs: 1000, namespace: db.ns(), codec: "bytes" });
  await cache.get("b", () => new Uint8Array([1, 2, 3]));
  const cached = await cache.get("b", () => new Uint8Array([9]));
  assert.equal([...cached], [1, 2, 3]);
  assert.is(cached.buffer.byteLength, Number(await db.redis.send(["STRLEN", cache.keys("b").data])));
  await cache.close();
});

Codec("a custom codec's encode and decode are used", async () => {
  const codec = {
    encode: (d: Date) => new TextEncoder().encode(String(d.getTime())),
    decode: (b: Uint8Array) => new Date(Number(new TextDecoder().decode(b))),
  };
  const cache = pipeline<Date>({ redis: db.redis, ttlMs: 1000, namespace: db.ns(), codec });
  const when = new Date(1_700_000_000_000);
  await cache.get("d", () => when);
  const back = await cache.get("d", () => new Date(0));
  assert.instance(back, Date);
  assert.is(back.getTime(), when.getTime());
  await cache.close();
});

Codec(
  "a value the codec cannot encode is a CodecError naming the key and the path, caches nothing and frees the lease",
  async () => {
    const cache = pipeline({ redis: db.redis, ttlMs: 1000, namespace: db.ns() }, lease());
    const keys = cache.keys("big");
    const prefix = `Cannot cache ${keys.data}: the json codec cannot encode the loaded value`;
    const error = await rejects(
      () => cache.get("big", () => ({ n: 10n })),
      CodecError,
      `${prefix} ($.n is a BigInt (JSON has none))`,
    ) as CodecError;
    assert.ok(error instanceof TypeError);
    assert.equal([error.path, error.key, error.label], ["$.n", keys.data, undefined]);
    const circular: Record<string, unknown> = { list: [] };
    (circular.list as unknown[]).push({ back: circular });
    await rejects(
      () => cache.get("big", () => circular),
      CodecError,
      `${prefix} ($.list[0].back refers back to an object that contains it (a cycle))`,
    );
    assert.is(await db.redis.send(["EXISTS", keys.data, keys.lease]), 0);
    assert.is(cache.stats().loadErrors, 2);
    // Nothing blocks the next caller: the lease went with the failure.
    assert.is(await cache.get("big", () => "fine"), "fine");
    const strings = pipeline({ redis: db.redis, ttlMs: 1000, namespace: db.ns(), codec: "string" });
    await rejects(
      () => strings.get("n", () => 5 as never),
      CodecError,
      `Cannot cache ${
        strings.keys("n").data
      }: the string codec cannot encode the loaded value (expected a string, got number)`,
    );
    await cache.close();
    await strings.close();
  },
);

Codec("json refuses what would not come back as it was, naming the label and the path inside the value", async () => {
  const cache = pipeline<unknown>({
    redis: db.redis,
    ttlMs: 1000,
    namespace: db.ns(),
    label: (id) => `user ${(id as readonly unknown[])[1]}`,
  });
  class Point {
    x = 1;
  }
  const sparse: unknown[] = [1];
  sparse[2] = 3;
  const cases: [unknown, string, string][] = [
    [{ user: { createdAt: new Date(0) } }, "$.user.createdAt", "is a Date (it would come back as a string)"],
    [{ m: new Map([[1, 2]]) }, "$.m", "is a Map (it would come back as {})"],
    [[new Set([1])], "$[0]", "is a Set (it would come back as {})"],
    [{ big: 1n }, "$.big", "is a BigInt (JSON has none)"],
    [
      { bin: new Uint8Array([1]) },
      "$.bin",
      "is a Uint8Array (it would come back as a plain object; use the bytes codec or encode it)",
    ],
    [
      { "a b": new ArrayBuffer(2) },
      '$["a b"]',
      "is an ArrayBuffer (it would come back as a plain object; use the bytes codec or encode it)",
    ],
    [[1, undefined], "$[1]", "is undefined in an array (it would come back as null)"],
    [sparse, "$[1]", "is undefined in an array (it would come back as null)"],
    [{ f: () => 1 }, "$.f", "is a function (JSON drops it)"],
    [{ s: Symbol("s") }, "$.s", "is a symbol (JSON drops it)"],
    [{ n: [0, NaN] }, "$.n[1]", "is NaN (it would come back as null)"],
    [{ n: -Infinity }, "$.n", "is -Infinity (it would come back as null)"],
    [{ j: { toJSON: () => 1 } }, "$.j", "has a toJSON method (it would come back as what toJSON returns)"],
    [new Point(), "$", "is a Point instance (it would come back as a plain object, without its class)"],
  ];
  for (const [value, path, reason] of cases) {
    const id = ["user", 7];
    const error = await rejects(
      () => cache.get(id, () => value),
      CodecError,
      `Cannot cache user 7 (${cache.keys(id).data}): the json codec cannot encode the loaded value (${path} ${reason})`,
    ) as CodecError;
    assert.ok(isCodecError(error));
    assert.equal([error.path, error.label, error.key], [path, "user 7", cache.keys(id).data]);
  }
  // What round-trips is accepted as is: an undefined property reads back as undefined all the same.
  const ok = {
    a: undefined,
    b: [null, "", 0, false],
    c: Object.assign(Object.create(null), { d: 1 }),
    "\ud800": "\udfff",
  };
  assert.equal(await cache.get(["user", 8], () => ok), ok);
  assert.equal(await cache.get(["user", 8], () => "other"), {
    b: [null, "", 0, false],
    c: { d: 1 },
    "\ud800": "\udfff",
  });
  // set() refuses the same way.
  await rejects(() => cache.set(["user", 9], { at: new Date(0) }), CodecError, /\(\$\.at is a Date/);
  assert.is(cache.stats().loadErrors, cases.length);
  await cache.close();
});

Codec("the string codec's refusal of a lone surrogate is a CodecError", async () => {
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 1000, namespace: db.ns(), codec: "string" });
  const error = await rejects(
    () => cache.get("s", () => "ok \ud83d then"),
    CodecError,
    `Cannot cache ${
      cache.keys("s").data
    }: the string codec cannot encode the loaded value (a lone surrogate at index 3 has no UTF-8 form)`,
  ) as CodecError;
  assert.equal([error.key, error.path], [cache.keys("s").data, "$"]);
  await cache.close();
});

Codec("a corrupt or foreign value is a miss, counted, reported and overwritten", async () => {
  const ev = events();
  const cache = pipeline({ redis: db.redis, ttlMs: 1000, namespace: db.ns(), onEvent: ev.onEvent }, lease());
  const cases: [string, string][] = [
    ["garbage", "not an envelope"],
    ["old", 'hl0;v;0;0;0;"old format"'],
    ["v1", 'hl1;v;0;0;0;"version 1"'],
    ["badjson", "hl3;v;0000000000000;60000;0;0;0;id;e;json;;;{not json"],
  ];
  for (const [id, raw] of cases) {
    const data = cache.keys(id).data;
    await db.redis.send(["SET", data, raw, "PX", 60_000]);
    const o = origin(() => `fresh ${id}`);
    assert.is(await cache.get(id, o.load), `fresh ${id}`);
    assert.is(o.calls, 1);
    assert.ok(String(await db.redis.send(["GET", data])).startsWith("hl3;v;"), "overwritten by the fill");
    assert.is(await cache.get(id, o.load), `fresh ${id}`);
    assert.is(o.calls, 1);
  }
  // Each corrupt value is seen by the first read and by the lease's re-read.
  assert.is(cache.stats().decodeErrors, 8);
  const first = ev.seen.find((e) => e.type === "decode-error") as { key: string; error: Error };
  assert.is(first.key, cache.keys("garbage").data);
  assert.match(first.error.message, /not a herdless envelope/);
  // A key of another Redis type is a foreign value too: a miss, then overwritten.
  const list = cache.keys("list");
  await db.redis.send(["RPUSH", list.data, "x"]);
  assert.is(await cache.get("list", () => "v"), "v");
  assert.is(await cache.get("list", () => "w"), "v");
  assert.is(cache.stats().decodeErrors, 10);
  await cache.close();
});

Codec(
  "a cache never serves a value another codec wrote: a miss naming both codecs, reloaded and overwritten",
  async () => {
    const namespace = db.ns();
    const ev = events();
    const strings = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace, codec: "string" });
    const objects = pipeline<{ n: number }>({ redis: db.redis, ttlMs: 60_000, namespace, onEvent: ev.onEvent });
    await strings.set("k", '{"n":1}');
    // The json cache reads the string cache's entry: not { n: 1 }, a miss.
    let loads = 0;
    assert.equal(await objects.get("k", () => ({ n: ++loads + 1 })), { n: 2 });
    assert.is(loads, 1, "the json cache did not reload");
    const error = ev.seen.find((e) => e.type === "decode-error");
    assert.ok(error !== undefined && error.type === "decode-error");
    assert.is((error.error as Error).message, "written by the string codec, and this cache reads with the json codec");
    // And the other way round: the string cache never serves the json cache's JSON text.
    let stringLoads = 0;
    assert.is(await strings.get("k", () => `text ${++stringLoads}`), "text 1");
    // Two custom codecs of different names are told apart as well.
    const custom = (name: string) => ({
      name,
      encode: (v: unknown) => String(v),
      decode: (p: Uint8Array) => new TextDecoder().decode(p),
    });
    const a = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace, codec: custom("a") });
    const b = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace, codec: custom("b") });
    await a.set("c", "from a");
    assert.is(await b.get("c", () => "from b's origin"), "from b's origin");
    await rejects(
      () => pipeline({ redis: db.redis, ttlMs: 1, codec: custom("no spaces") }),
      TypeError,
      `Cannot create pipeline: the codec's 'name' must be 1 to 64 letters, digits, '.', '_' or '-', got "no spaces"`,
    );
    for (const c of [strings, objects, a, b]) await c.close();
  },
);

Codec("a not-found is returned as undefined and cached only when negativeTtlMs > 0", async () => {
  const none = origin(() => undefined);
  const uncached = pipeline({ redis: db.redis, ttlMs: 1000, namespace: db.ns() }, lease());
  assert.is(await uncached.get("missing", none.load), undefined);
  assert.is(await uncached.get("missing", none.load), undefined);
  assert.is(none.calls, 2);
  assert.is(await db.redis.send(["EXISTS", uncached.keys("missing").data, uncached.keys("missing").lease]), 0);

  const found = origin(() => undefined);
  const cached = pipeline(
    { redis: db.redis, ttlMs: 10_000, namespace: db.ns(), negativeTtlMs: 500 },
    swr({ staleMs: 5000 }),
    lease(),
    jitter({ spreadMs: 1000 }),
  );
  assert.is(await cached.get("missing", found.load), undefined);
  assert.is(await cached.get("missing", found.load), undefined);
  assert.is(found.calls, 1);
  assert.is(cached.stats().hits, 1);
  const data = cached.keys("missing").data;
  assert.match(String(await db.redis.send(["GET", data])), /^hl3;n;\d{13};500;0;0;\d+;[\w-]{12};[\w-]{12};json;;;$/);
  // Exactly negativeTtlMs: no stale window and no jitter for a marker.
  const pttl = Number(await db.redis.send(["PTTL", data]));
  assert.ok(pttl > 0 && pttl <= 500, `pttl ${pttl}`);
  await uncached.close();
  await cached.close();
});

Codec.run();
