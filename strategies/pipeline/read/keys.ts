/**
 * Identity to Redis keys. The identity is hashed (SHA-256, base64url) so any
 * input, however long or odd, gives short keys without separators to escape;
 * the digest is the hash tag, so a cache's data key and lease key always land
 * in the same Redis Cluster slot and the publish script may touch both.
 *
 * Every key of a namespace starts with `<namespace>:{` (the versions' keys
 * too: `coherence/version_keys.ts`) and a namespace holds no `{`, so no two
 * namespaces share a key; nor glob characters, whitespace or control
 * characters, so `~<namespace>:{*` is an ACL pattern for it alone.
 *
 * @module
 */
import { createHash, type Hash } from "node:crypto";
import type { Identity, Keys } from "../../types.ts";

// A lone surrogate: a high half not followed by a low one, or a low half not after a high one.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

// `{` ends the namespace in every key; glob characters would make its ACL
// pattern cover other namespaces; whitespace and control characters cannot
// be told apart in a key listing (or pasted into redis-cli).
const REFUSED = /[{}*?[\]\\\s\p{Cc}\p{Cf}]/u;

/** Throws unless `namespace` can prefix keys without changing their hash tag or sharing them with another namespace. */
export function checkNamespace(namespace: unknown): string {
  if (typeof namespace !== "string" || namespace.length === 0) {
    throw new TypeError(
      `Cannot create pipeline: 'namespace' must be a non-empty string, got ${JSON.stringify(namespace)}`,
    );
  }
  // Keys reach Redis as UTF-8, where a lone surrogate becomes U+FFFD: "a\ud800"
  // and "a\ufffd" would name the same keys, and two caches would share values.
  if (LONE_SURROGATE.test(namespace)) {
    throw new TypeError(
      `Cannot create pipeline: 'namespace' must not contain a lone surrogate (keys are written as UTF-8), got ${
        JSON.stringify(namespace)
      }`,
    );
  }
  const refused = REFUSED.exec(namespace);
  if (refused !== null) {
    throw new TypeError(
      `Cannot create pipeline: 'namespace' must not contain whitespace, control characters or any of { } * ? [ ] \\ ` +
        `(it prefixes keys as '<namespace>:{' and ACL patterns as '~<namespace>:{*'), got ${
          JSON.stringify(namespace)
        } (${JSON.stringify(refused[0])} at index ${refused.index})`,
    );
  }
  return namespace;
}

/**
 * The keys of `identity` under `namespace`.
 *
 * A string and a one-element tuple are different identities (`"a"` vs
 * `["a"]`), and so are `["a", 1]` and `["a", "1"]`: the hash input records
 * the kind of each part. Strings that differ only in unpaired surrogates
 * (`"x\ud800"` vs `"x\ufffd"`) differ too: see {@linkcode feed}.
 *
 * @throws {TypeError} when the identity is not a non-empty string or a non-empty array of strings and finite numbers.
 */
export function keysFor(namespace: string, identity: Identity): Keys {
  const hash = createHash("sha256");
  if (typeof identity === "string") {
    if (identity.length === 0) throw badIdentity(identity);
    feed(hash, "", identity);
  } else if (Array.isArray(identity) && identity.length > 0) {
    for (const part of identity) {
      if (typeof part === "string") feed(hash, String(part.length), part);
      else if (typeof part === "number" && Number.isFinite(part)) hash.update(`n:${part};`);
      else throw badIdentity(identity);
    }
  } else {
    throw badIdentity(identity);
  }
  const tag = `${namespace}:{${hash.digest("base64url")}}`;
  return { data: `${tag}:data`, lease: `${tag}:lease` };
}

/**
 * Feed one string to the hash as `s<length>:` and its UTF-8 bytes, the
 * encoding keys have always used. UTF-8 cannot carry a lone surrogate:
 * `hash.update(string)` would write U+FFFD for it, so `"\ud800"`, `"\udc00"`
 * and `"\ufffd"` would share a key and be served each other's values. A
 * string holding one is fed as `u<length>:` and its UTF-16LE code units
 * instead: the tag no well-formed string is fed under keeps the two
 * encodings apart, and UTF-16 keeps every code unit.
 */
function feed(hash: Hash, length: string, text: string): void {
  if (!LONE_SURROGATE.test(text)) {
    hash.update(`s${length}:`).update(text);
    return;
  }
  const units = new Uint8Array(text.length * 2);
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    units[2 * i] = unit & 0xff;
    units[2 * i + 1] = unit >> 8;
  }
  hash.update(`u${length}:`).update(units);
}

function badIdentity(identity: unknown): TypeError {
  let shown: string;
  try {
    shown = JSON.stringify(identity) ?? String(identity);
  } catch {
    shown = String(identity);
  }
  return new TypeError(
    `Cannot derive keys: the identity must be a non-empty string or a non-empty array of strings and finite numbers, got ${shown}`,
  );
}
