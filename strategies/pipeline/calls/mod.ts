/**
 * The calls of a cache: a get top to bottom (`get.ts`), `getMany`, `warm`,
 * the writes, and what every call shares: its options, its deadline, and
 * the lifecycle `close()` waits on.
 *
 * @module
 */
export { type CallOptions, callOptions, GET_OPTIONS, SET_OPTIONS, WARM_OPTIONS } from "./call_options.ts";
export { CallDeadline } from "./deadline.ts";
export { type GetParts, Gets } from "./get.ts";
export { type BatchCall, getMany } from "./get_many.ts";
export { Lifecycle } from "./lifecycle.ts";
export { warm, type WarmCall } from "./warm.ts";
export { type WriteParts, Writes } from "./writes.ts";
