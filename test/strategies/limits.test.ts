/**
 * What is written can be read: every setting that ends up in an envelope is
 * refused at the call when the read side would refuse the entry (a TTL over
 * 15 digits, too many or too long tags), naming it; at the bound, an entry
 * is stored and read back as a hit.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { coalesce } from "../../strategies/coalesce.ts";
import { MAX_TAG_CHARS, MAX_TAGS, MAX_WINDOW_MS } from "../../strategies/limits.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import { swr } from "../../strategies/swr.ts";
import { rejects } from "../support/assert.ts";
import { useRedis } from "../support/fixture.ts";

const Limits = suite("limits: what is written can be read");
const db = useRedis(Limits, { prefix: "lim" });

const over = MAX_WINDOW_MS + 1;
const tooLong = `Cannot %s: 'ttlMs' is ${over}, over the longest window an entry carries (${MAX_WINDOW_MS} ms)`;

Limits("a window over 15 digits is refused where it is given, naming it", async () => {
  await rejects(() => pipeline({ redis: db.redis, ttlMs: over }), RangeError, tooLong.replace("%s", "create pipeline"));
  await rejects(
    () => swr({ staleMs: over }),
    RangeError,
    `Cannot create swr: 'staleMs' is ${over}, over the longest window an entry carries (${MAX_WINDOW_MS} ms)`,
  );
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 1000, namespace: db.ns() }, coalesce());
  let calls = 0;
  await rejects(() => cache.get("k", () => `v${++calls}`, { ttlMs: over }), RangeError, tooLong.replace("%s", "get"));
  await rejects(() => cache.set("k", "v", { ttlMs: over }), RangeError, tooLong.replace("%s", "set"));
  await rejects(
    () =>
      cache.get("k", (ctx) => {
        ctx.setTtlMs(over);
        return "v";
      }),
    RangeError,
    tooLong.replace("%s", "setTtlMs"),
  );
  assert.is(calls, 0);
  await cache.close();
});

Limits("too many tags, or a tag too long, is refused at the call; at the bound the entry is a hit", async () => {
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() });
  const many = Array.from({ length: 200 }, (_, i) => `tag-${String(i).padStart(15, "0")}`);
  let calls = 0;
  const load = () => `v${++calls}`;
  await rejects(
    () => cache.get("k", load, { tags: many }),
    RangeError,
    `Cannot get: 'tags' holds 200 tags, over the ${MAX_TAGS} a value may carry`,
  );
  await rejects(
    () => cache.set("k", "v", { tags: ["x".repeat(MAX_TAG_CHARS + 1)] }),
    RangeError,
    `Cannot set: 'tags[0]' is ${MAX_TAG_CHARS + 1} characters, over the ${MAX_TAG_CHARS} a tag may hold`,
  );
  await rejects(() => cache.invalidateTags(many), RangeError, /^Cannot invalidateTags: 'tags' holds 200 tags/);
  assert.is(calls, 0);
  // The most an envelope carries, every tag at its longest in characters that percent-encode widest,
  // and the longest window: stored once, then read back as a hit.
  const widest = Array.from({ length: MAX_TAGS }, (_, i) => `${i}`.padEnd(MAX_TAG_CHARS, "\u20ac"));
  assert.is(await cache.get("edge", load, { tags: widest, ttlMs: MAX_WINDOW_MS }), "v1");
  assert.is(await cache.get("edge", load), "v1");
  assert.is(calls, 1, "the entry written at the bound was not read back");
  assert.equal([cache.stats().decodeErrors, cache.stats().hits], [0, 1]);
  await cache.close();
});

Limits.run();
