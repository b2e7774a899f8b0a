import { suite } from "uvu";
import * as assert from "uvu/assert";
import fc from "fast-check";
import { pipeline } from "../../../../strategies/pipeline/pipeline.ts";
import { checkNamespace, keysFor } from "../../../../strategies/pipeline/read/keys.ts";
import { epochKeyOf, escapeTag, tagKeyPrefix } from "../../../../strategies/pipeline/coherence/version_keys.ts";
import { encodeEnvelope } from "../../../../strategies/pipeline/read/envelope.ts";
import { writePublication } from "../../../../strategies/pipeline/fill/publish_script.ts";
import type { Identity } from "../../../../strategies/types.ts";
import { rejects } from "../../../support/assert.ts";
import { useRedis } from "../../../support/fixture.ts";
import { seed } from "../../../support/random.ts";

const Keys = suite("keysFor()");

Keys("keysFor() keeps the keys of well-formed identities as they were (stored values stay reachable)", () => {
  // Computed before lone surrogates got their own encoding: a well-formed
  // identity must hash exactly as before, or an upgrade empties every cache.
  const golden: [Identity, string][] = [
    ["a", "1DFdg6ld-ut57MnU9bLWGAToiqqstB2FWXe5kyhkNcQ"],
    [["a"], "400ft39Ju7YfwCGiFd6Bz8ING8CLkC1RY45i3dROUOs"],
    [["a", 1], "gK85UPAJ0oVf8VI7GqXkHUzooS0pPyozB1K8_4TF2Os"],
    [["a", "1"], "pOddqM7xZvaMNE36VFjt3ewGUWNKPq2XzbanpQcfnPo"],
    ["héllo 😀", "5Xa3w28tILy6K8y42qxFLE8aHBO49-xrPqeCRaE0nVY"],
    [["user", 42, "ünï", -1.5], "yMJ-9Fb8QKUHIyH04OzTj1EEzM7V5nRGdEjEYm7uwnY"],
  ];
  for (const [identity, digest] of golden) {
    assert.equal(keysFor("ns", identity), { data: `ns:{${digest}}:data`, lease: `ns:{${digest}}:lease` });
  }
});

// Each pair differs only in code units that UTF-8 cannot carry (a lone
// surrogate becomes U+FFFD), so a hash of the UTF-8 bytes saw them as one.
const surrogatePairs: [Identity, Identity][] = [
  ["x\ud800", "x\ufffd"],
  ["\ud800", "\udc00"],
  ["😀".slice(0, 1), "🦀".slice(0, 1)], // the first halves of two different emoji
  ["😀".slice(1), "🦀".slice(1)], // and their second halves
  ["\udc00\ud800", "\ufffd\ufffd"], // a pair in the wrong order is two lone surrogates
  [["x\ud800"], ["x\ufffd"]],
  [["\ud800", 1], ["\udc00", 1]],
  [["a", "\ud800"], ["a", "\ufffd"]],
];

Keys("identities that differ only in unpaired surrogates get different keys", () => {
  for (const [a, b] of surrogatePairs) {
    assert.is.not(keysFor("ns", a).data, keysFor("ns", b).data, `${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
  }
});

Keys("an ill-formed identity cannot collide with a well-formed one or another shape", () => {
  // Candidates a naive escape could confuse: the escape's own bytes spelled
  // as text, the same code units as a tuple or as a number, U+FFFD itself.
  const ids: Identity[] = [
    "\ud800",
    ["\ud800"],
    "\ufffd",
    ["\ufffd"],
    "\u00d8",
    "\x00\ud800",
    "\ud800\x00",
    ["\ud800", "\ud800"],
    ["\ud800\ud800"],
    ["\ud800", 0],
    ["\ud800", "0"],
    "u:\x00\xd8",
    ["u1:\x00\xd8"],
    [55296],
  ];
  const seen = new Map<string, Identity>();
  for (const id of ids) {
    const key = keysFor("ns", id).data;
    assert.is(seen.get(key), undefined, `${JSON.stringify(id)} shares a key with ${JSON.stringify(seen.get(key))}`);
    seen.set(key, id);
  }
});

Keys("distinct identities made of arbitrary UTF-16 code units never share a key (property)", () => {
  // Few code units, so that random pairs often differ only in surrogates:
  // lone halves, valid pairs, reversed pairs, U+FFFD, and digits and ':' that
  // spell the hash input's own separators; plus any 16-bit code unit.
  const unit = fc.oneof(
    fc.constantFrom("a", "1", ":", "\ud800", "\udc00", "\ud83d", "\ude00", "\ufffd", "\x00"),
    fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)),
  );
  const text = fc.string({ unit, minLength: 1, maxLength: 4 });
  const identity: fc.Arbitrary<Identity> = fc.oneof(
    text,
    fc.array(fc.oneof(text, fc.string({ unit, maxLength: 3 }), fc.integer({ min: 0, max: 11 })), {
      minLength: 1,
      maxLength: 3,
    }),
  );
  fc.assert(
    fc.property(identity, identity, (a, b) => {
      const same = JSON.stringify(a) === JSON.stringify(b) && typeof a === typeof b;
      return (keysFor("ns", a).data === keysFor("ns", b).data) === same;
    }),
    { numRuns: 5000, seed },
  );
});

Keys("checkNamespace() refuses a namespace with a lone surrogate, which would share keys with another", async () => {
  for (const namespace of ["a\ud800", "\udc00", "😀".slice(0, 1)]) {
    await rejects(
      () => checkNamespace(namespace),
      TypeError,
      `Cannot create pipeline: 'namespace' must not contain a lone surrogate (keys are written as UTF-8), got ${
        JSON.stringify(namespace)
      }`,
    );
  }
  assert.is(checkNamespace("a\ufffd😀"), "a\ufffd😀");
});

Keys(
  "checkNamespace() refuses '{', '}', glob characters, whitespace and control characters, naming the one found",
  async () => {
    const refused: [string, string, number][] = [
      ["a{b}", "{", 1],
      ["a}", "}", 1],
      ["app*", "*", 3],
      ["a?", "?", 1],
      ["[a]", "[", 0],
      ["a]", "]", 1],
      ["a\\b", "\\", 1],
      ["a b", " ", 1],
      ["a\nb", "\n", 1],
      ["a\x00", "\x00", 1],
      ["a\u200bb", "\u200b", 1],
    ];
    for (const [namespace, char, at] of refused) {
      await rejects(
        () => checkNamespace(namespace),
        TypeError,
        "Cannot create pipeline: 'namespace' must not contain whitespace, control characters or any of { } * ? [ ] \\ " +
          `(it prefixes keys as '<namespace>:{' and ACL patterns as '~<namespace>:{*'), got ${
            JSON.stringify(namespace)
          } (${JSON.stringify(char)} at index ${at})`,
      );
    }
    await rejects(
      () => checkNamespace(""),
      TypeError,
      `Cannot create pipeline: 'namespace' must be a non-empty string, got ""`,
    );
    for (const namespace of ["app", "app:users", "app:", "a.b-c_d/e@f", "café", "データ"]) {
      assert.is(checkNamespace(namespace), namespace);
    }
  },
);

/** Every kind of key a cache of `namespace` writes: an identity's data and lease keys, the epoch, a tag's version. */
function keysOf(namespace: string, identity: Identity, tag: string): string[] {
  const { data, lease } = keysFor(namespace, identity);
  return [data, lease, epochKeyOf(namespace), tagKeyPrefix(namespace) + escapeTag(tag)];
}

Keys("no two namespaces share a key, and no tag names another key (property)", () => {
  // Namespaces and tags built of the characters that spell the layout itself.
  const unit = fc.constantFrom("a", "p", ":", "t", "a", "g", "e", "o", "c", "h", "%", "u", "7", "B", "-");
  const namespace = fc.string({ unit, minLength: 1, maxLength: 8 });
  const tagUnit = fc.oneof(
    unit,
    fc.constantFrom("{", "}", "{}", ":{", "}:data", "epoch", "\ud800", "\udc00", "😀"),
    fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)),
  );
  const tag = fc.string({ unit: tagUnit, minLength: 1, maxLength: 6 });
  const identity = fc.oneof(fc.string({ minLength: 1, maxLength: 3 }), fc.constant("k"));
  fc.assert(
    fc.property(namespace, namespace, identity, identity, tag, tag, (na, nb, ia, ib, ta, tb) => {
      const a = keysOf(na, ia, ta);
      const b = keysOf(nb, ib, tb);
      // The namespace is what precedes the first '{', less its ':'.
      for (const key of a) if (key.slice(0, key.indexOf("{") - 1) !== na) return false;
      // A cache's own keys are distinct kinds: a tag is never its epoch, data or lease key.
      if (new Set(a).size !== a.length) return false;
      if (na === nb) return ta === tb || a[3] !== b[3];
      return a.every((key) => !b.includes(key) && !key.startsWith(`${nb}:{`));
    }),
    { numRuns: 20_000, seed },
  );
});

Keys("escapeTag() is one-to-one, lone surrogates included, and leaves no '{' or '}'", () => {
  const tags = ["a", "%61", "a:b", "a%3Ab", "\ud800", "%uD800", "\ufffd", "\udc00", "😀", "{x}", "%7Bx%7D", "a\ud800b"];
  const seen = new Map<string, string>();
  for (const tag of tags) {
    const escaped = escapeTag(tag);
    assert.not.match(escaped, /[{}]/);
    assert.is(seen.get(escaped), undefined, `${JSON.stringify(tag)} and ${JSON.stringify(seen.get(escaped))}`);
    seen.set(escaped, tag);
  }
  assert.is(escapeTag("user:42"), "user%3A42");
  assert.is(escapeTag("a\ud800b"), "a%uD800b");
});

const Spaces = suite("namespaces that share a prefix");
const spaces = useRedis(Spaces, { prefix: "spaces" });

Spaces("cache 'app' invalidating the tag 'epoch' leaves cache 'app:tag' alone", async () => {
  const ns = spaces.ns();
  const app = pipeline<string>({ redis: spaces.redis, ttlMs: 60_000, namespace: ns });
  const tagged = pipeline<string>({ redis: spaces.redis, ttlMs: 60_000, namespace: `${ns}:tag` });
  try {
    assert.is(await tagged.get("k", () => "kept"), "kept");
    assert.is(await app.get("k", () => "app's", { tags: ["epoch"] }), "app's");
    await app.invalidateTags(["epoch"]);
    assert.is(await tagged.get("k", () => "reloaded"), "kept");
    assert.is(await app.get("k", () => "app's again", { tags: ["epoch"] }), "app's again");
    assert.is(tagged.stats().loads, 1);
  } finally {
    await Promise.all([app.close(), tagged.close()]);
  }
});

Spaces("a tag spelling another namespace's data key writes its own key, not that one", async () => {
  const ns = spaces.ns();
  const app = pipeline<string>({ redis: spaces.redis, ttlMs: 60_000, namespace: ns });
  const tagged = pipeline<string>({ redis: spaces.redis, ttlMs: 60_000, namespace: `${ns}:tag` });
  try {
    assert.is(await tagged.get("k", () => "kept"), "kept");
    const data = tagged.keys("k").data;
    const before = await spaces.redis.send(["GET", data]);
    // Under the old layout this tag's key, app:tag:{<digest>}:data, was that data key.
    const tag = data.slice(`${ns}:tag:`.length);
    await app.invalidateTags([tag]);
    assert.equal(await spaces.redis.send(["GET", data]), before);
    assert.ok(Number(await spaces.redis.send(["PTTL", data])) > 0);
    assert.is(await tagged.get("k", () => "reloaded"), "kept");
    // Every key cache 'app' wrote is its own: under 'app:{', never under 'app:tag:{'.
    const keys = (await spaces.redis.send(["KEYS", `${ns}*`]) as string[]).sort();
    assert.equal(
      keys.filter((k) => !k.startsWith(`${ns}:tag:{`)),
      [tagKeyPrefix(ns) + escapeTag(tag)],
    );
  } finally {
    await Promise.all([app.close(), tagged.close()]);
  }
});

Spaces("entries written under the old version keys are misses after the upgrade, never errors", async () => {
  const namespace = spaces.ns();
  const cache = pipeline<string>({ redis: spaces.redis, ttlMs: 60_000, namespace });
  const keys = cache.keys("k");
  // As an earlier version left them: the epoch at <namespace>:epoch, a tag at <namespace>:tag:<tag>.
  await spaces.redis.send(["SET", `${namespace}:epoch`, "oldepoch0000"]);
  await spaces.redis.send(["SET", `${namespace}:tag:t`, "oldtag000000"]);
  const fields = {
    negative: false,
    freshMs: 60_000,
    staleMs: 0,
    ifErrorMs: 0,
    loadMs: 0,
    id: "old",
    epoch: "oldepoch0000",
    codec: "json",
    etag: undefined,
    tags: ["t"],
    tagVersions: ["oldtag000000"],
  };
  await writePublication(spaces.redis, {
    key: keys.data,
    lease: keys.lease,
    mode: "plain",
    envelope: encodeEnvelope(fields, '"old"'),
    px: 60_000,
    channel: "",
  });
  try {
    assert.is(await cache.get("k", () => "new", { tags: ["t"] }), "new");
    assert.is(cache.stats().loads, 1);
    assert.is(cache.stats().decodeErrors, 0);
    assert.is(await cache.get("k", () => "again", { tags: ["t"] }), "new");
  } finally {
    await cache.close();
  }
});

const Cache = suite("pipeline() keys with lone surrogates");
const db = useRedis(Cache);

Cache("a value cached for one lone surrogate is never served for another identity", async () => {
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace: "surrogates" });
  try {
    for (const [a, b] of surrogatePairs) {
      assert.is(await cache.get(a, () => "first"), "first");
      assert.is(await cache.get(b, () => "second"), "second", `${JSON.stringify(b)} got ${JSON.stringify(a)}'s value`);
    }
  } finally {
    await cache.close();
  }
});

Keys.run();
Spaces.run();
Cache.run();
