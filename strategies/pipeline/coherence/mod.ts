/**
 * What keeps a cache's memory coherent with Redis: the invalidations it
 * hears (client tracking, or the messages herdless writers publish where
 * tracking is refused), the read markers that keep an overtaken read out of
 * memory, and the namespace epoch and tag versions.
 *
 * @module
 */
export {
  type InvalidationConsumer,
  Invalidations,
  isTrackingClient,
  isTrackingRefusal,
  type Marker,
} from "./invalidations.ts";
export {
  type Duplicable,
  InvalidationMessages,
  type InvalidationSource,
  isDuplicable,
} from "./invalidation_messages.ts";
export { NearTier } from "./near_tier.ts";
export { epochKeyOf } from "./version_keys.ts";
export { type Stamp, token, Versions, type VersionsContext } from "./versions.ts";
