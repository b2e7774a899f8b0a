/**
 * The real clients the adapter suites run against, each as a "flavor": how
 * to open one on a server and close it, and what its replies look like
 * (RESP3 maps as objects or as flat arrays). The packages are the dev-only
 * aliases of ./package.json (`npm ci --prefix test/adapters`).
 */
import { Cluster as IoCluster5, Redis as Ioredis5 } from "ioredis5";
import { Cluster as IoCluster6, Redis as Ioredis6 } from "ioredis6";
import { createClient as createClient4, createCluster as createCluster4 } from "redis4";
import { createClient as createClient5, createCluster as createCluster5 } from "redis5";
import { createClient as createClient6 } from "redis6";
import { fromIoredis } from "../../resp/adapters/ioredis.ts";
import { fromNodeRedis } from "../../resp/adapters/node_redis.ts";
import type { RedisLike } from "../../resp/types.ts";

/** One open client behind an adapter. */
export interface Opened {
  readonly redis: RedisLike;
  close(): Promise<void>;
}

/** A client package and configuration to run the adapter contract against. */
export interface Flavor {
  readonly name: string;
  /** HGETALL answers an object (RESP3 maps as maps) rather than a flat array. */
  readonly mapsAsObjects: boolean;
  /** `buffers: true` works for every command, not only GET (false for Bun's client). */
  readonly buffersEverywhere: boolean;
  open(url: string): Promise<Opened>;
}

interface Ioredis {
  on(event: "error", listener: (e: Error) => void): unknown;
  connect(): Promise<void>;
  quit(): Promise<unknown>;
}

// Connected (created with lazyConnect) before a test uses it; closed with
// QUIT. ioredis reports socket errors as 'error' events, which it prints
// when nobody listens: the suites pause and kill servers.
async function ioredis(client: Ioredis & Parameters<typeof fromIoredis>[0]): Promise<Opened> {
  client.on("error", () => {});
  await client.connect();
  return { redis: fromIoredis(client), close: async () => void await client.quit() };
}

export const IOREDIS: readonly Flavor[] = [
  {
    name: "ioredis 5",
    mapsAsObjects: false,
    buffersEverywhere: true,
    open: (url) => ioredis(new Ioredis5(url, { lazyConnect: true })),
  },
  {
    // ioredis 6 speaks RESP3 by default, with replies shaped as over RESP2.
    name: "ioredis 6",
    mapsAsObjects: false,
    buffersEverywhere: true,
    open: (url) => ioredis(new Ioredis6(url, { lazyConnect: true })),
  },
  {
    name: "ioredis 6 (replyMapping resp3)",
    mapsAsObjects: true,
    buffersEverywhere: true,
    open: (url) => ioredis(new Ioredis6(url, { lazyConnect: true, protocol: 3, replyMapping: "resp3" })),
  },
];

export const NODE_REDIS: readonly Flavor[] = [
  {
    name: "node-redis 4",
    mapsAsObjects: false,
    buffersEverywhere: true,
    async open(url) {
      const client = await createClient4({ url }).on("error", () => {}).connect();
      return { redis: fromNodeRedis(client), close: async () => void await client.disconnect() };
    },
  },
  {
    name: "node-redis 5",
    mapsAsObjects: false,
    buffersEverywhere: true,
    async open(url) {
      const client = await createClient5({ url }).on("error", () => {}).connect();
      return { redis: fromNodeRedis(client), close: () => client.close() };
    },
  },
  {
    name: "node-redis 5 (RESP3)",
    mapsAsObjects: true,
    buffersEverywhere: true,
    async open(url) {
      const client = await createClient5({ url, RESP: 3 }).on("error", () => {}).connect();
      return { redis: fromNodeRedis(client), close: () => client.close() };
    },
  },
  {
    // node-redis 6 speaks RESP3 by default.
    name: "node-redis 6",
    mapsAsObjects: true,
    buffersEverywhere: true,
    async open(url) {
      const client = await createClient6({ url }).on("error", () => {}).connect();
      return { redis: fromNodeRedis(client), close: () => client.close() };
    },
  },
];

/** Cluster clients, opened on a cluster's seed URLs. */
export interface ClusterFlavor {
  readonly name: string;
  open(seeds: readonly string[]): Promise<Opened>;
}

const hostPort = (url: string) => {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port) };
};

export const CLUSTERS: readonly ClusterFlavor[] = [
  {
    name: "ioredis 5 Cluster",
    open: (seeds) => ioredis(new IoCluster5(seeds.map(hostPort), { lazyConnect: true })),
  },
  {
    name: "ioredis 6 Cluster",
    open: (seeds) => ioredis(new IoCluster6(seeds.map(hostPort), { lazyConnect: true })),
  },
  {
    name: "node-redis 4 createCluster",
    async open(seeds) {
      const client = createCluster4({ rootNodes: seeds.map((url) => ({ url })) });
      client.on("error", () => {});
      await client.connect();
      return { redis: fromNodeRedis(client), close: () => client.disconnect() };
    },
  },
  {
    name: "node-redis 5 createCluster",
    async open(seeds) {
      const client = createCluster5({ rootNodes: seeds.map((url) => ({ url })) });
      client.on("error", () => {});
      await client.connect();
      return { redis: fromNodeRedis(client), close: () => client.close() };
    },
  },
];
