/**
 * Helpers both layers use: option validation, abort plumbing, error brands,
 * the diagnostics channels. Imports nothing else of `resp/`, so anything in
 * `resp/` or `strategies/` may import it without forming a cycle.
 *
 * @module
 */
export { type FanOut, fanOut, listenAbort, onAbort, race, type RaceGroup, raceGroup, unlistenAbort } from "./abort.ts";
export { brand, hasBrand } from "./brand.ts";
export { ignore } from "./ignore.ts";
export { replyText } from "./text.ts";
export { type TimeoutOptions, timeoutOptions } from "./timeout_options.ts";
export { isWorkerd } from "./runtime.ts";
export { commandChannel, eventChannel, getChannel, type Traceable, traced } from "./tracing.ts";
export {
  abortSignal,
  boolean,
  checkedOptions,
  closestName,
  func,
  intInRange,
  knownOptions,
  nonNegativeInt,
  optionalString,
  optionsObject,
  positiveInt,
  positiveNumber,
  show,
} from "./validate.ts";
