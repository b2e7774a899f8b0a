import { suite } from "uvu";
import * as assert from "uvu/assert";
import process from "node:process";
import { constants, deflateRawSync } from "node:zlib";
import { compressed, MAX_INFLATED_BYTES } from "../../../strategies/codec/compressed.ts";
import { near } from "../../../strategies/near.ts";
import { decodeEnvelope } from "../../../strategies/pipeline/read/envelope.ts";
import { pipeline } from "../../../strategies/pipeline/pipeline.ts";
import { rejects } from "../../support/assert.ts";
import { useRedis } from "../../support/fixture.ts";
import { events } from "../../support/strategies.ts";

const Compressed = suite("compressed()");
const db = useRedis(Compressed, { prefix: "compressed" });

const rows = (n: number) => Array.from({ length: n }, (_, i) => ({ id: i, name: `row ${i}`, active: i % 2 === 0 }));
const stored = async (key: string) =>
  decodeEnvelope(await db.redis.send(["GET", key], { buffers: true }) as Uint8Array);

Compressed("compressed() rejects a bad minBytes or codec with messages naming the setting", async () => {
  await rejects(
    () => compressed("json", { minBytes: -1 }),
    RangeError,
    "Cannot create compressed codec: 'minBytes' must be a non-negative integer, got -1",
  );
  await rejects(
    () => compressed("json", { minBytes: 1.5 }),
    RangeError,
    "Cannot create compressed codec: 'minBytes' must be a non-negative integer, got 1.5",
  );
  await rejects(
    () => compressed("json", { maxInflatedBytes: 0 }),
    RangeError,
    "Cannot create compressed codec: 'maxInflatedBytes' must be an integer in 1..1073741824, got 0",
  );
  await rejects(
    () => compressed("json", { maxInflatedBytes: 2 ** 30 + 1 }),
    RangeError,
    "Cannot create compressed codec: 'maxInflatedBytes' must be an integer in 1..1073741824, got 1073741825",
  );
  await rejects(
    () => compressed("json", { minBytes: 4096, maxInflatedBytes: 4095 }),
    RangeError,
    "Cannot create compressed codec: 'minBytes' (4096) is over 'maxInflatedBytes' (4095): nothing would be compressed",
  );
  await rejects(
    () => compressed("yaml" as never),
    TypeError,
    `Cannot create compressed codec: 'codec' must be "json", "string", "bytes" or an object with encode and decode functions, got "yaml"`,
  );
  await rejects(
    () => compressed(compressed()),
    TypeError,
    "Cannot create compressed codec: 'codec' is already compressed()",
  );
});

Compressed(
  "values at or over minBytes that shrink are stored deflated and flagged in the envelope; smaller ones as they are",
  async () => {
    const cache = pipeline<unknown>({ redis: db.redis, ttlMs: 60_000, namespace: db.ns(), codec: compressed() });
    const big = rows(100);
    const json = new TextEncoder().encode(JSON.stringify(big));
    assert.ok(json.length >= 1024);
    assert.equal(await cache.get("big", () => big), big);
    const e = await stored(cache.keys("big").data);
    assert.is(e.compressed, true);
    assert.ok((e.payload as Uint8Array).length < json.length / 2, `stored ${(e.payload as Uint8Array).length} bytes`);
    // A hit reads it back through inflate and the wrapped codec.
    assert.equal(await cache.get("big", () => "loaded again"), big);

    const small = { a: 1 };
    await cache.get("small", () => small);
    const s = await stored(cache.keys("small").data);
    assert.is(s.compressed, undefined);
    assert.is(new TextDecoder().decode(s.payload as Uint8Array), `{"a":1}`);
    assert.equal(await cache.get("small", () => "loaded again"), small);

    // At minBytes exactly it compresses; one byte under, it does not.
    const exact = pipeline<string>({
      redis: db.redis,
      ttlMs: 60_000,
      namespace: db.ns(),
      codec: compressed("string", { minBytes: 2000 }),
    });
    await exact.get("at", () => "a".repeat(2000));
    await exact.get("under", () => "a".repeat(1999));
    assert.is((await stored(exact.keys("at").data)).compressed, true);
    assert.is((await stored(exact.keys("under").data)).compressed, undefined);
    // Counted in encoded bytes: 700 "é" are 1400 UTF-8 bytes.
    await exact.get("utf8", () => "é".repeat(700));
    await exact.get("utf8-over", () => "é".repeat(1000));
    assert.is((await stored(exact.keys("utf8").data)).compressed, undefined);
    assert.is((await stored(exact.keys("utf8-over").data)).compressed, true);
    assert.is(await exact.get("utf8-over", () => "x"), "é".repeat(1000));
    await cache.close();
    await exact.close();
  },
);

Compressed("a value that does not shrink is stored as it is", async () => {
  const cache = pipeline<Uint8Array>({
    redis: db.redis,
    ttlMs: 60_000,
    namespace: db.ns(),
    codec: compressed("bytes", { minBytes: 16 }),
  });
  // Random bytes do not deflate.
  const noise = crypto.getRandomValues(new Uint8Array(4096));
  await cache.get("noise", () => noise);
  const e = await stored(cache.keys("noise").data);
  assert.is(e.compressed, undefined);
  assert.equal([...(e.payload as Uint8Array)], [...noise]);
  assert.equal([...await cache.get("noise", () => new Uint8Array())], [...noise]);
  await cache.close();
});

Compressed(
  "values written without compressed() read back unchanged, and a plain value that looks deflated stays plain",
  async () => {
    const ns = db.ns();
    const plain = pipeline<unknown>({ redis: db.redis, ttlMs: 60_000, namespace: ns });
    const plainBytes = pipeline<Uint8Array>({ redis: db.redis, ttlMs: 60_000, namespace: ns, codec: "bytes" });
    const big = rows(100);
    await plain.get("json", () => big);
    // A bytes value that IS deflate data: no payload prefix decides, so it is read as the bytes it is.
    const deflated = deflateRawSync(new TextEncoder().encode("x".repeat(5000)));
    await plainBytes.get("bytes", () => deflated);
    const zipped = pipeline<unknown>({ redis: db.redis, ttlMs: 60_000, namespace: ns, codec: compressed() });
    const zippedBytes = pipeline<Uint8Array>({
      redis: db.redis,
      ttlMs: 60_000,
      namespace: ns,
      codec: compressed("bytes"),
    });
    assert.equal(await zipped.get("json", () => "loaded"), big);
    assert.equal([...await zippedBytes.get("bytes", () => new Uint8Array())], [...deflated]);
    assert.is(zipped.stats().loads + zippedBytes.stats().loads, 0);
    await Promise.all([plain.close(), plainBytes.close(), zipped.close(), zippedBytes.close()]);
  },
);

Compressed("a corrupt compressed payload is a decode error (a miss that reloads), never a crash", async () => {
  const log = events();
  const ns = db.ns();
  const cache = pipeline<unknown>({
    redis: db.redis,
    ttlMs: 60_000,
    namespace: ns,
    codec: compressed(),
    onEvent: log.onEvent,
  });
  const big = rows(100);
  await cache.get("k", () => big);
  const key = cache.keys("k").data;
  const raw = await db.redis.send(["GET", key], { buffers: true }) as Uint8Array;
  // Keep the header (up to the payload), garble the deflate stream.
  const header = raw.length - (await stored(key)).payload.length;
  const broken = raw.slice();
  for (let i = header; i < broken.length; i++) broken[i] = 0xff;
  await db.redis.send(["SET", key, broken]);
  assert.equal(await cache.get("k", () => ["reloaded"]), ["reloaded"]);
  assert.is(cache.stats().decodeErrors, 1);
  assert.is(cache.stats().loads, 2);
  // A cache without compressed() reads a compressed value as a miss too.
  await cache.get("z", () => big);
  const plain = pipeline<unknown>({ redis: db.redis, ttlMs: 60_000, namespace: ns });
  assert.equal(await plain.get("z", () => "plain load"), "plain load");
  assert.is(plain.stats().decodeErrors, 1);
  await cache.close();
  await plain.close();
});

/** Raw deflate data standing for `mib` MiB of zeros in about 1 KB per MiB, built without inflating anything. */
function bomb(mib: number): Uint8Array {
  // A full flush ends each segment byte-aligned with no back-reference past
  // it, so copies of one segment chain into one valid stream; 0x03 0x00 is
  // an empty final block.
  const segment = deflateRawSync(new Uint8Array(1 << 20), { finishFlush: constants.Z_FULL_FLUSH });
  const out = new Uint8Array(segment.length * mib + 2);
  for (let i = 0; i < mib; i++) out.set(segment, i * segment.length);
  out.set([0x03, 0x00], out.length - 2);
  return out;
}

/** Replace the payload of `key`'s stored entry with `payload`, keeping its header as the cache wrote it. */
async function forge(key: string, payload: Uint8Array): Promise<void> {
  const raw = await db.redis.send(["GET", key], { buffers: true }) as Uint8Array;
  const header = raw.length - (await stored(key)).payload.length;
  const forged = new Uint8Array(header + payload.length);
  forged.set(raw.subarray(0, header), 0);
  forged.set(payload, header);
  await db.redis.send(["SET", key, forged, "PX", 60_000]);
}

Compressed(
  "inflation stops at maxInflatedBytes: a value inflating one byte past it is a decode error naming the cap, at it a hit",
  async () => {
    const log = events();
    const cache = pipeline<string>({
      redis: db.redis,
      ttlMs: 60_000,
      namespace: db.ns(),
      codec: compressed("string", { minBytes: 16, maxInflatedBytes: 4096 }),
      onEvent: log.onEvent,
    });
    await cache.get("at", () => "a".repeat(4096));
    assert.is((await stored(cache.keys("at").data)).compressed, true);
    assert.is(await cache.get("at", () => "loaded again"), "a".repeat(4096));

    await cache.get("past", () => "b".repeat(1000));
    await forge(cache.keys("past").data, deflateRawSync(new TextEncoder().encode("b".repeat(4097))));
    assert.is(await cache.get("past", () => "reloaded"), "reloaded");
    const errors = log.seen.filter((e) => e.type === "decode-error") as { key: string; error: unknown }[];
    assert.is(errors.length, 1);
    assert.instance(errors[0]!.error, RangeError);
    assert.is((errors[0]!.error as Error).message, "a compressed value inflates past maxInflatedBytes (4096 bytes)");
    assert.is(errors[0]!.key, cache.keys("past").data);
    assert.is(cache.stats().decodeErrors, 1);
    await cache.close();
  },
);

Compressed("a value whose encoding is over maxInflatedBytes is stored as it is, so it reads back", async () => {
  const cache = pipeline<string>({
    redis: db.redis,
    ttlMs: 60_000,
    namespace: db.ns(),
    codec: compressed("string", { minBytes: 16, maxInflatedBytes: 4096 }),
  });
  await cache.get("over", () => "c".repeat(4097));
  const e = await stored(cache.keys("over").data);
  assert.is(e.compressed, undefined);
  assert.is((e.payload as Uint8Array).length, 4097);
  assert.is(await cache.get("over", () => "loaded again"), "c".repeat(4097));
  assert.is(cache.stats().loads, 1);
  await cache.close();
});

Compressed(
  "a forged 1 MB entry standing for 1 GiB is a miss under the default cap: the get returns its loader's value and memory stays far below the bomb",
  async () => {
    assert.is(MAX_INFLATED_BYTES, 8 * 1024 * 1024);
    const log = events();
    let grew = -1;
    const before = process.memoryUsage().rss;
    const cache = pipeline<Uint8Array>({
      redis: db.redis,
      ttlMs: 60_000,
      namespace: db.ns(),
      codec: compressed("bytes"),
      onEvent(event) {
        // Sampled right after the decode, while whatever it allocated is still around.
        if (event.type === "decode-error") grew = process.memoryUsage().rss - before;
        log.onEvent(event);
      },
    });
    await cache.get("k", () => new Uint8Array(4096));
    const payload = bomb(1024);
    assert.ok(payload.length < 1_100_000, `the bomb is ${payload.length} bytes`);
    await forge(cache.keys("k").data, payload);
    const value = await cache.get("k", () => new Uint8Array([7]));
    assert.is(value.length, 1, `got ${value.length} bytes`);
    assert.is(value[0], 7);
    const error = log.seen.find((e) => e.type === "decode-error") as { error: Error } | undefined;
    assert.is(error?.error.message, `a compressed value inflates past maxInflatedBytes (${MAX_INFLATED_BYTES} bytes)`);
    // Inflating all of it takes 1 GiB at once; the cap stops at 8 MiB (runtimes' heaps and GC add some noise).
    assert.ok(grew >= -1e9 && grew < 512 * 1024 * 1024, `RSS grew by ${grew} bytes`);
    await cache.close();
  },
);

Compressed("near({ maxBytes }) counts a compressed value at its inflated size, not its stored one", async () => {
  const cache = pipeline<string>({
    redis: db.redis,
    ttlMs: 60_000,
    namespace: db.ns(),
    codec: compressed("string"),
  }, near({ maxBytes: 10_000 }));
  // Both deflate to under 200 bytes; one inflates past the tier's bound.
  await cache.get("small", () => "s".repeat(5_000));
  await cache.get("large", () => "l".repeat(50_000));
  assert.ok((await stored(cache.keys("large").data)).payload.length < 200);
  await cache.get("small", () => "x");
  await cache.get("large", () => "x");
  await cache.get("small", () => "x");
  await cache.get("large", () => "x");
  // The small one is kept after its first remote read; the large one never is.
  assert.is(cache.stats().nearHits, 1);
  assert.is(cache.stats().loads, 2);
  await cache.close();
});

Compressed("the returned codec encodes and decodes as the wrapped one outside a pipeline", () => {
  const codec = compressed<{ a: number }>();
  const payload = codec.encode({ a: 1 });
  assert.is(payload, `{"a":1}`);
  assert.equal(codec.decode(new TextEncoder().encode(`{"a":1}`)), { a: 1 });
});

Compressed.run();
