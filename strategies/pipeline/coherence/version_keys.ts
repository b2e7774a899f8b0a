/**
 * Where the versions live: `<namespace>:{}:epoch` and
 * `<namespace>:{}:tag:<tag, percent-encoded>`, beside the data and lease
 * keys `<namespace>:{<digest>}:data|lease`.
 *
 * Every key of a namespace starts with `<namespace>:{`, and a namespace
 * holds no `{`: the first `{` of any key tells whose it is, so no two
 * namespaces share a key, and the ACL pattern `~<namespace>:{*` covers one
 * namespace alone (`~app:*` also covered `app:tag`'s keys, and cache `app`'s
 * tag `epoch` was cache `app:tag`'s epoch). The empty hash tag `{}` sets the
 * version keys apart from every data key (whose tag is a non-empty digest)
 * and makes Redis Cluster hash the whole key, so tag keys spread over the
 * slots. A tag is percent-encoded into its key, so no tag names another key
 * and every key stays printable.
 *
 * @module
 */

/** The key of `namespace`'s epoch. */
export function epochKeyOf(namespace: string): string {
  return `${namespace}:{}:epoch`;
}

/** What every tag key of `namespace` starts with. */
export function tagKeyPrefix(namespace: string): string {
  return `${namespace}:{}:tag:`;
}

// A lone surrogate: a high half not followed by a low one, or a low half not after a high one.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * `tag` as its key holds it: `encodeURIComponent`'s form (only unreserved
 * ASCII left as is, `%` itself encoded), one-to-one. A lone surrogate,
 * which UTF-8 and so `encodeURIComponent` cannot carry, becomes `%u` and its
 * four hex digits: `u` is no hex digit, so that never reads as another escape.
 */
export function escapeTag(tag: string): string {
  try {
    return encodeURIComponent(tag);
  } catch {
    let out = "";
    let from = 0;
    for (const match of tag.matchAll(LONE_SURROGATE)) {
      out += encodeURIComponent(tag.slice(from, match.index)) +
        `%u${match[0].charCodeAt(0).toString(16).toUpperCase()}`;
      from = match.index! + 1;
    }
    return out + encodeURIComponent(tag.slice(from));
  }
}
