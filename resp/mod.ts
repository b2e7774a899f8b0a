/**
 * The RESP client on its own: `connect`, `RedisClient`, `Script`, the
 * encoder and decoder, and the errors they raise.
 *
 * @example Connect and PING
 * ```ts
 * import { connect } from "@herdless/herdless";
 * const redis = await connect(process.env.REDIS_URL);
 * console.log(await redis.send(["PING"]));
 * await redis.close();
 * ```
 *
 * @module
 */
export { connect, type PushListener, RedisClient } from "./client.ts";
export { type ConnectOptions, type ReconnectOptions } from "./options.ts";
export { parseRedisUrl, type RedisUrl } from "./url.ts";
export { Script } from "./script.ts";
export { Decoder, type DecoderHandlers, type DecoderOptions } from "./decode/mod.ts";
export { CommandWriter, type CommandWriterOptions, encodeCommand } from "./connection/mod.ts";
export {
  ConnectionError,
  isConnectionError,
  isProtocolError,
  isRedisReplyError,
  isTimeoutError,
  ProtocolError,
  RedisReplyError,
  TimeoutError,
} from "./errors.ts";
export type {
  Arg,
  CommandTraceContext,
  ConnectionEvent,
  RedisLike,
  Reply,
  ReplyMap,
  SendOptions,
  TrackingClient,
  TrackingListener,
} from "./types.ts";
export {
  ClusterClient,
  type ClusterOptions,
  type ClusterStats,
  connectCluster,
  CrossSlotError,
  isCrossSlotError,
  keySlot,
} from "./cluster/mod.ts";
export { connectSentinel, SentinelClient, type SentinelEvent, type SentinelOptions } from "./sentinel/mod.ts";
export {
  type BunRedisClient,
  fromBunRedis,
  fromIoredis,
  fromNodeRedis,
  type IoredisClient,
  type NodeRedisClient,
  type NodeRedisCluster,
  type NodeRedisCommandOptions,
} from "./adapters/mod.ts";
