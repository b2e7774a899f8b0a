/**
 * Reading the cluster's slot map from one of its nodes: `CLUSTER SHARDS`
 * (Redis >= 7), or `CLUSTER SLOTS` on older servers.
 *
 * @module
 */
import { RedisClient } from "../client.ts";
import { ConnectionError, isRedisReplyError } from "../errors.ts";
import type { ResolvedOptions } from "../options.ts";
import { type NodeAddress, parseShards, parseSlots, type Topology } from "./slot_map.ts";

/** A node to ask: through its open connection when there is one, else over a short-lived one. */
export interface MapSource {
  readonly address: NodeAddress;
  readonly client?: RedisClient | undefined;
}

/** A map read, and the node it came from (a node's own word about its slots outranks a MOVED that named it). */
export interface MapRead {
  readonly topology: Topology;
  readonly from: NodeAddress;
}

/**
 * Ask each source in turn until one returns a map in which some primary owns
 * a slot. Each attempt is bounded by `timeoutMs` (connect and reply).
 *
 * @param stop checked between attempts: a closed client stops asking.
 * @throws the last attempt's error when no source gives a map.
 */
export async function readSlotMap(
  sources: readonly MapSource[],
  node: ResolvedOptions,
  timeoutMs: number,
  stop: () => boolean,
): Promise<MapRead | undefined> {
  let lastError: unknown = new ConnectionError("No cluster node is known");
  for (const { address, client } of sources) {
    if (stop()) return undefined;
    try {
      const topology = client !== undefined
        ? await ask(client, address.host, node.tls !== undefined, timeoutMs)
        : await askOnce(address, node, timeoutMs);
      if (topology.primaries.length === 0) throw new ConnectionError(`The node at ${address.id} serves no slots yet`);
      return { topology, from: address };
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}

async function askOnce(address: NodeAddress, node: ResolvedOptions, timeoutMs: number): Promise<Topology> {
  const client = new RedisClient({
    ...node,
    host: address.host,
    port: address.port,
    connectTimeoutMs: timeoutMs,
    reconnect: false,
    offlineQueue: 0,
  });
  try {
    await client.ready;
    return await ask(client, address.host, node.tls !== undefined, timeoutMs);
  } finally {
    client.destroy();
  }
}

async function ask(client: RedisClient, host: string, tls: boolean, timeoutMs: number): Promise<Topology> {
  try {
    return parseShards(await client.send(["CLUSTER", "SHARDS"], { timeoutMs }), host, tls);
  } catch (error) {
    // Redis < 7 has no CLUSTER SHARDS.
    if (!isRedisReplyError(error) || !/unknown subcommand|unknown command/i.test(error.message)) throw error;
    return parseSlots(await client.send(["CLUSTER", "SLOTS"], { timeoutMs }), host);
  }
}
