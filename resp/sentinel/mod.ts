/**
 * Redis Sentinel: {@linkcode connectSentinel} asks the sentinels for a
 * group's master, checks it, and follows it across failovers.
 *
 * @example Connect through the sentinels
 * ```ts
 * import { connectSentinel } from "@herdless/herdless";
 * const sentinels = (process.env.SENTINEL_URLS ?? "redis://127.0.0.1:26379").split(",");
 * const redis = await connectSentinel({ sentinels, name: process.env.SENTINEL_NAME ?? "mymaster" });
 * console.log(await redis.send(["PING"]));
 * await redis.close();
 * ```
 *
 * @module
 */
export { connectSentinel, SentinelClient } from "./client.ts";
export type { SentinelEvent, SentinelOptions } from "./options.ts";
