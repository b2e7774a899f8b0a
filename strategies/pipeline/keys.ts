/**
 * Identity to Redis keys. The identity is hashed (SHA-256, base64url) so any
 * input, however long or odd, gives short keys without separators to escape;
 * the digest is the hash tag, so a cache's data key and lease key always land
 * in the same Redis Cluster slot and the publish script may touch both.
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { Identity, Keys } from "../types.ts";

/** Throws unless `namespace` can prefix keys without changing their hash tag. */
export function checkNamespace(namespace: unknown): string {
  if (typeof namespace !== "string" || namespace.length === 0 || /[{}]/.test(namespace)) {
    throw new TypeError(
      `Cannot create pipeline: 'namespace' must be a non-empty string without '{' or '}', got ${
        JSON.stringify(namespace)
      }`,
    );
  }
  return namespace;
}

/**
 * The keys of `identity` under `namespace`.
 *
 * A string and a one-element tuple are different identities (`"a"` vs
 * `["a"]`), and so are `["a", 1]` and `["a", "1"]`: the hash input records
 * the kind of each part.
 *
 * @throws {TypeError} when the identity is not a non-empty string or a non-empty array of strings and finite numbers.
 */
export function keysFor(namespace: string, identity: Identity): Keys {
  const hash = createHash("sha256");
  if (typeof identity === "string") {
    if (identity.length === 0) throw badIdentity(identity);
    hash.update("s:").update(identity);
  } else if (Array.isArray(identity) && identity.length > 0) {
    for (const part of identity) {
      if (typeof part === "string") hash.update(`s${part.length}:`).update(part);
      else if (typeof part === "number" && Number.isFinite(part)) hash.update(`n:${part};`);
      else throw badIdentity(identity);
    }
  } else {
    throw badIdentity(identity);
  }
  const tag = `${namespace}:{${hash.digest("base64url")}}`;
  return { data: `${tag}:data`, lease: `${tag}:lease` };
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
