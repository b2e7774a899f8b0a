/**
 * Tags as a call, a loader or `invalidateTags()` gives them: checked once,
 * without duplicates.
 *
 * @module
 */
import { MAX_TAG_CHARS, MAX_TAGS } from "../../limits.ts";

/**
 * Throws unless `tags` is an array of non-empty strings an envelope can
 * carry (at most {@linkcode MAX_TAGS}, each at most {@linkcode MAX_TAG_CHARS}
 * characters); returns them without duplicates.
 */
export function checkTags(where: string, name: string, tags: unknown): readonly string[] {
  if (!Array.isArray(tags)) {
    throw new TypeError(`Cannot ${where}: '${name}' must be an array of strings, got ${typeof tags}`);
  }
  for (let i = 0; i < tags.length; i++) {
    if (typeof tags[i] !== "string" || tags[i].length === 0) {
      throw new TypeError(
        `Cannot ${where}: '${name}[${i}]' must be a non-empty string, got ${JSON.stringify(tags[i])}`,
      );
    }
    if (tags[i].length > MAX_TAG_CHARS) {
      throw new RangeError(
        `Cannot ${where}: '${name}[${i}]' is ${tags[i].length} characters, over the ${MAX_TAG_CHARS} a tag may hold`,
      );
    }
  }
  const unique = tags.length <= 1 ? tags : [...new Set(tags as string[])];
  if (unique.length > MAX_TAGS) {
    throw new RangeError(
      `Cannot ${where}: '${name}' holds ${unique.length} tags, over the ${MAX_TAGS} a value may carry`,
    );
  }
  return unique;
}
