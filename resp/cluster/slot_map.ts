/**
 * The cluster's slot map: which primary owns each of the 16384 slots, read
 * from `CLUSTER SHARDS` (Redis >= 7) or `CLUSTER SLOTS` (older servers), in
 * either RESP2 (flat key/value arrays) or RESP3 (maps) form.
 *
 * @module
 */
import { replyText } from "../shared/mod.ts";
import { SLOTS } from "./crc16.ts";
import type { Reply, ReplyMap } from "../types.ts";

/** Where a node listens. `id` is `host:port`, the key of every node table. */
export interface NodeAddress {
  readonly id: string;
  readonly host: string;
  readonly port: number;
}

/** A parsed slot map. */
export interface Topology {
  /** Address id of the primary owning each slot; `undefined` for a slot no one serves. */
  readonly owners: (string | undefined)[];
  /** Every node the reply named (primaries and replicas), by address id. */
  readonly nodes: Map<string, NodeAddress>;
  /** Address ids of the primaries that own at least one slot. */
  readonly primaries: string[];
}

/** Make a node address; an IPv6 host is kept bare (`::1`), as `net.connect` wants it. */
export function nodeAddress(host: string, port: number): NodeAddress {
  return { id: `${host}:${port}`, host, port };
}

/**
 * Parse the `host:port` of a MOVED or ASK reply. An empty host (the node
 * does not know its own endpoint) means the host of the node that answered.
 */
export function parseEndpoint(text: string, fallbackHost: string): NodeAddress | undefined {
  const colon = text.lastIndexOf(":");
  if (colon === -1) return undefined;
  const port = Number(text.slice(colon + 1));
  if (!Number.isInteger(port) || port <= 0 || port > 65535) return undefined;
  const host = text.slice(0, colon).replace(/^\[(.*)\]$/, "$1");
  return nodeAddress(host === "" ? fallbackHost : host, port);
}

/** An empty map: every slot unowned. */
export function emptyTopology(): Topology {
  return { owners: new Array<string | undefined>(SLOTS).fill(undefined), nodes: new Map(), primaries: [] };
}

function fields(value: Reply | undefined): ReplyMap | undefined {
  if (Array.isArray(value)) {
    const out: ReplyMap = Object.create(null);
    for (let i = 0; i + 1 < value.length; i += 2) out[String(value[i])] = value[i + 1]!;
    return out;
  }
  if (value !== null && typeof value === "object" && !(value instanceof Uint8Array) && !(value instanceof Error)) {
    return value as ReplyMap;
  }
  return undefined;
}

function text(value: Reply | undefined): string {
  const t = replyText(value);
  if (t !== undefined) return t;
  if (typeof value === "number" || typeof value === "bigint") return String(value);
  return "";
}

function int(value: Reply | undefined): number {
  const n = typeof value === "number" ? value : Number(text(value));
  return Number.isInteger(n) ? n : -1;
}

function endpointHost(candidates: string[], viaHost: string): string | undefined {
  for (const c of candidates) {
    if (c === "?") return undefined; // the node does not know how to be reached
    if (c !== "") return c;
  }
  return viaHost;
}

function assign(topology: Topology, from: number, to: number, owner: string): boolean {
  if (!Number.isInteger(from) || !Number.isInteger(to) || from < 0 || to >= SLOTS || from > to) return false;
  topology.owners.fill(owner, from, to + 1);
  return true;
}

/**
 * Parse a `CLUSTER SHARDS` reply.
 *
 * @param viaHost the host of the node that answered, for nodes that report no endpoint.
 * @param tls whether to use each node's `tls-port`.
 */
export function parseShards(reply: Reply, viaHost: string, tls: boolean): Topology {
  const topology = emptyTopology();
  if (!Array.isArray(reply)) throw new TypeError("CLUSTER SHARDS did not return an array");
  for (const rawShard of reply) {
    const shard = fields(rawShard);
    if (shard === undefined) continue;
    const nodes = Array.isArray(shard.nodes) ? shard.nodes : [];
    let primary: NodeAddress | undefined;
    let primaryFailed = false;
    for (const rawNode of nodes) {
      const node = fields(rawNode);
      if (node === undefined) continue;
      const port = tls && node["tls-port"] !== undefined ? int(node["tls-port"]) : int(node.port);
      const host = endpointHost([text(node.endpoint), text(node.ip)], viaHost);
      if (host === undefined || port <= 0) continue;
      const address = nodeAddress(host, port);
      topology.nodes.set(address.id, address);
      if (text(node.role) !== "master") continue;
      // A primary that failed and was replaced stays in its shard as a master, with health "fail",
      // until it rejoins as a replica (Redis 7.0, 8.0 and Valkey 8.1 alike, listed before or after
      // the one elected in its place): the owner is the master that has not failed.
      const failed = text(node.health).startsWith("fail");
      if (primary === undefined || (primaryFailed && !failed)) {
        primary = address;
        primaryFailed = failed;
      }
    }
    const slots = Array.isArray(shard.slots) ? shard.slots : [];
    if (primary === undefined || slots.length === 0) continue;
    let owns = false;
    for (let i = 0; i + 1 < slots.length; i += 2) {
      owns = assign(topology, int(slots[i]), int(slots[i + 1]), primary.id) || owns;
    }
    if (owns && !topology.primaries.includes(primary.id)) topology.primaries.push(primary.id);
  }
  return topology;
}

/** Parse a `CLUSTER SLOTS` reply (Redis < 7). */
export function parseSlots(reply: Reply, viaHost: string): Topology {
  const topology = emptyTopology();
  if (!Array.isArray(reply)) throw new TypeError("CLUSTER SLOTS did not return an array");
  for (const range of reply) {
    if (!Array.isArray(range) || range.length < 3) continue;
    let primary: NodeAddress | undefined;
    for (let i = 2; i < range.length; i++) {
      const node = range[i];
      if (!Array.isArray(node)) continue;
      const host = endpointHost([text(node[0])], viaHost);
      const port = int(node[1]);
      if (host === undefined || port <= 0) continue;
      const address = nodeAddress(host, port);
      topology.nodes.set(address.id, address);
      if (i === 2) primary = address;
    }
    if (primary === undefined) continue;
    if (assign(topology, int(range[0]), int(range[1]), primary.id) && !topology.primaries.includes(primary.id)) {
      topology.primaries.push(primary.id);
    }
  }
  return topology;
}
