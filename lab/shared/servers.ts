/**
 * The disposable servers the stampede lab and the soak start: the test
 * harness's redis-server, cluster and Sentinel group (free loopback ports,
 * no persistence, killed with the process). One door to `test/support/`, so
 * the lab names the harness's files in one place.
 *
 * @module
 */
export { type RedisServer, startRedis } from "../../test/support/redis_server.ts";
export { startCluster } from "../../test/support/redis_cluster.ts";
export { type Address, type SentinelGroup, startSentinelGroup } from "../../test/support/redis_sentinel.ts";
