/**
 * The Redis Cluster client: slots, the slot map, the keys of a command,
 * node connections, MOVED/ASK redirects, learned MOVEDs, cluster pub/sub and
 * tracking.
 *
 * @module
 */
export { ClusterClient, type ClusterOptions, type ClusterStats, connectCluster } from "./client.ts";
export { firstKey } from "./command_keys.ts";
export { CrossSlotError, isCrossSlotError, keySlot } from "./slot.ts";
