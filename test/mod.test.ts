/**
 * The public names of herdless (mod.ts), pinned: a name added, renamed or dropped
 * by accident (a move, a refactor) fails here before a user finds it.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { join, resolve } from "node:path";
import { exportsOf } from "./support/exports.ts";

const file = join(resolve(import.meta.dirname ?? new URL(".", import.meta.url).pathname, ".."), "mod.ts");
const Exports = suite("mod.ts exports");

Exports("exactly these values", async () => {
  assert.equal((await exportsOf(file)).values, [
    "ClosedError",
    "ClusterClient",
    "CodecError",
    "ConnectionError",
    "CrossSlotError",
    "OverloadedError",
    "ProtocolError",
    "RedisClient",
    "RedisReplyError",
    "SchemaError",
    "Script",
    "SentinelClient",
    "TimeoutError",
    "cacheStatus",
    "coalesce",
    "compressed",
    "connect",
    "connectCluster",
    "connectSentinel",
    "fromBunRedis",
    "fromIoredis",
    "fromNodeRedis",
    "isClosedError",
    "isCodecError",
    "isConnectionError",
    "isCrossSlotError",
    "isOverloadedError",
    "isProtocolError",
    "isRedisReplyError",
    "isSchemaError",
    "isTimeoutError",
    "jitter",
    "keySlot",
    "lease",
    "limit",
    "near",
    "parseRedisUrl",
    "pipeline",
    "prometheus",
    "swr",
    "xfetch",
  ]);
});

Exports("exactly these types", async () => {
  assert.equal((await exportsOf(file)).types, [
    "Arg",
    "BatchLoaderContext",
    "BunRedisClient",
    "Cache",
    "CacheEvent",
    "CacheEventBody",
    "CacheEventMessage",
    "CacheResult",
    "CacheStats",
    "CacheStatusOptions",
    "CloseOptions",
    "ClusterOptions",
    "ClusterStats",
    "CoalesceStrategy",
    "Codec",
    "CodecErrorOptions",
    "CodecOption",
    "CommandTraceContext",
    "CompressedOptions",
    "ConnectOptions",
    "ConnectionEvent",
    "Entry",
    "GetOptions",
    "GetTraceContext",
    "Identity",
    "InvalidationMode",
    "IoredisClient",
    "JitterOptions",
    "JitterStrategy",
    "Keys",
    "LeaseOptions",
    "LeaseStrategy",
    "LimitOptions",
    "LimitStrategy",
    "LoadMany",
    "Loader",
    "LoaderContext",
    "NearOptions",
    "NearStrategy",
    "NodeRedisClient",
    "NodeRedisCluster",
    "NodeRedisCommandOptions",
    "PipelineOptions",
    "PreviousValue",
    "PrometheusOptions",
    "PushCapable",
    "PushListener",
    "ReconnectOptions",
    "RedisLike",
    "RedisUrl",
    "Reply",
    "ReplyMap",
    "SchemaErrorOptions",
    "SendOptions",
    "SentinelEvent",
    "SentinelOptions",
    "SetOptions",
    "StandardSchemaIssue",
    "StandardSchemaProps",
    "StandardSchemaResult",
    "StandardSchemaV1",
    "StatsSource",
    "Strategy",
    "SwrOptions",
    "SwrStrategy",
    "TrackingClient",
    "TrackingListener",
    "WakeupSource",
    "WarmOptions",
    "WarmReport",
    "XfetchOptions",
    "XfetchStrategy",
  ]);
});

const strategyEntry = join(
  resolve(import.meta.dirname ?? new URL(".", import.meta.url).pathname, ".."),
  "strategies/strategy.ts",
);

// What only a strategy author needs has an entry of its own (herdless/strategy); the root keeps
// Strategy and Entry as deprecated aliases for one release.
Exports("the strategy entry: exactly these types, and no values", async () => {
  const { values, types } = await exportsOf(strategyEntry);
  assert.equal(values, []);
  assert.equal(types, [
    "CacheContext",
    "Entry",
    "Fill",
    "FillRequest",
    "FillStage",
    "Load",
    "LoadRequest",
    "LocalTier",
    "Outcome",
    "PublishGuard",
    "ReadResult",
    "StoredEntry",
    "Strategy",
    "Ticket",
    "Verdict",
    "Wakeups",
    "WritePlan",
  ]);
});

Exports.run();
