/**
 * Tags as a call, a loader or `invalidateTags()` gives them: checked once,
 * without duplicates.
 *
 * @module
 */

/** Throws unless `tags` is an array of non-empty strings; returns them without duplicates. */
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
  }
  return tags.length <= 1 ? tags : [...new Set(tags as string[])];
}
