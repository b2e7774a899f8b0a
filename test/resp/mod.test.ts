/**
 * The public names of herdless/resp (resp/mod.ts), pinned: a name added, renamed or dropped
 * by accident (a move, a refactor) fails here before a user finds it.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { join, resolve } from "node:path";
import { exportsOf } from "../support/exports.ts";

const file = join(resolve(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "../.."), "resp/mod.ts");
const Exports = suite("resp/mod.ts exports");

Exports("exactly these values", async () => {
  assert.equal((await exportsOf(file)).values, [
    "ClusterClient",
    "CommandWriter",
    "ConnectionError",
    "CrossSlotError",
    "Decoder",
    "ProtocolError",
    "RedisClient",
    "RedisReplyError",
    "Script",
    "SentinelClient",
    "TimeoutError",
    "connect",
    "connectCluster",
    "connectSentinel",
    "encodeCommand",
    "fromBunRedis",
    "fromIoredis",
    "fromNodeRedis",
    "isConnectionError",
    "isCrossSlotError",
    "isProtocolError",
    "isRedisReplyError",
    "isTimeoutError",
    "keySlot",
    "parseRedisUrl",
  ]);
});

Exports("exactly these types", async () => {
  assert.equal((await exportsOf(file)).types, [
    "Arg",
    "BunRedisClient",
    "ClusterOptions",
    "ClusterStats",
    "CommandTraceContext",
    "CommandWriterOptions",
    "ConnectOptions",
    "ConnectionEvent",
    "DecoderHandlers",
    "DecoderOptions",
    "IoredisClient",
    "NodeRedisClient",
    "NodeRedisCluster",
    "NodeRedisCommandOptions",
    "PushListener",
    "ReconnectOptions",
    "RedisLike",
    "RedisUrl",
    "Reply",
    "ReplyMap",
    "SendOptions",
    "SentinelEvent",
    "SentinelOptions",
    "TrackingClient",
    "TrackingListener",
  ]);
});

Exports.run();
