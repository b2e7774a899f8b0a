/**
 * {@linkcode fromNodeRedis}: a node-redis client or cluster (`createClient`,
 * `createCluster`) as a {@linkcode RedisLike}.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import type { Arg, RedisLike, Reply, SendOptions } from "../types.ts";
import { checkArgs } from "../connection/mod.ts";
import { firstKey } from "../cluster/mod.ts";
import { bufferArgument, nameOf, run } from "./common.ts";

/**
 * The per-command options {@linkcode fromNodeRedis} passes: node-redis 4
 * reads `returnBuffers`, node-redis 5 and later `abortSignal` and
 * `typeMapping`; each ignores the others' fields.
 */
export interface NodeRedisCommandOptions {
  /** node-redis 4: bulk strings as `Buffer`s. */
  returnBuffers?: boolean;
  /** node-redis 5+: a command still waiting to be written is dropped when this aborts. */
  abortSignal?: AbortSignal;
  /** node-redis 5+: how each RESP type is decoded, by type byte (`36`, `$`: bulk strings). */
  typeMapping?: { [type: number]: unknown };
}

/** What {@linkcode fromNodeRedis} calls on a node-redis client (`createClient()`, v4 and later). */
export interface NodeRedisClient {
  /** Send any command, arguments as strings or `Buffer`s. */
  sendCommand(args: (string | Buffer)[], options?: NodeRedisCommandOptions): Promise<unknown>;
}

/**
 * What {@linkcode fromNodeRedis} calls on a node-redis cluster
 * (`createCluster()`, v4 and later): `sendCommand` routed by the command's
 * first key. `masters` tells a cluster from a client.
 */
export interface NodeRedisCluster {
  /** The cluster's primaries (read only to tell a cluster from a client). */
  readonly masters: readonly unknown[];
  /** Send any command to the node that owns `firstKey` (any node when undefined). */
  sendCommand(
    firstKey: string | Buffer | undefined,
    isReadonly: boolean | undefined,
    args: (string | Buffer)[],
    options?: NodeRedisCommandOptions,
  ): Promise<unknown>;
}

// RESP's type bytes of a bulk string (`$`) and a map (`%`), node-redis 5's
// keys for how it decodes them.
const BLOB_STRING = 36;
const MAP = 37;
// Passed on every command, so a client made with withTypeMapping() still
// answers the cache with strings. Maps as Maps: node-redis 6 decodes a RESP3
// map into a plain object, where a `__proto__` field silently disappears;
// a Map keeps every key, and becomes an object without a prototype here.
const TEXT: NodeRedisCommandOptions = Object.freeze({ typeMapping: Object.freeze({ [MAP]: Map }) });
const BYTES: NodeRedisCommandOptions = Object.freeze({
  returnBuffers: true,
  typeMapping: Object.freeze({ [BLOB_STRING]: Buffer, [MAP]: Map }),
});

/**
 * Use a node-redis 4 or 5 client or cluster (`createClient()`,
 * `createCluster()`, connected) wherever herdless takes a
 * {@linkcode RedisLike}: as a pipeline's `redis`, or for `Script.run`. The
 * client stays yours: connect, configure and close it as you do now.
 *
 * - A server error rejects with `RedisReplyError` (`code` is `"NOSCRIPT"`,
 *   `"WRONGTYPE"`...), and one inside an `EXEC` reply is such an error in
 *   place; node-redis' own failures (`ClientClosedError`, a lost socket)
 *   pass through unchanged.
 * - `timeoutMs` rejects with `TimeoutError` that long after the call and
 *   `signal` with `signal.reason`. node-redis 5 and later get the signal
 *   too, so a command still waiting to be written is never written; one
 *   already written may still run on the server, as with herdless' own
 *   client (node-redis 4 is not given the signal: it would keep a listener
 *   on it per command).
 * - `buffers: true` returns every bulk string as bytes (`returnBuffers` in
 *   v4, a `typeMapping` in v5). Without it bulk strings are strings, even on
 *   a client made with `withTypeMapping()`.
 * - RESP3 maps (v5 with `RESP: 3`, v6 by default) become objects without a
 *   prototype, every field kept (`__proto__` included), sets arrays. RESP3 attributes are not reported (`onAttribute` is never called).
 * - On a cluster each command goes to the primary owning its first key (the
 *   key after `numkeys` for `EVAL`/`EVALSHA`); commands without a key
 *   (`PUBLISH`, `TIME`, `SCRIPT`...) to any node.
 * - The cache's lease waiters poll for publications, since an adapter cannot
 *   push; give the pipeline a herdless RESP3 client as `wakeups` to have
 *   them woken at once.
 *
 * @param client a connected node-redis client or cluster.
 * @returns an object whose `send(command, options)` runs the command on `client`.
 * @throws {TypeError} when `client` has no `sendCommand` function.
 *
 * @example A cache over a node-redis client
 * ```ts
 * import { createClient } from "redis";
 * import { coalesce, fromNodeRedis, lease, pipeline } from "@herdless/herdless";
 *
 * const client = await createClient({ url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379" }).connect();
 * const cache = pipeline<string>(
 *   { redis: fromNodeRedis(client), ttlMs: 60_000, namespace: "node-redis-example" },
 *   coalesce(),
 *   lease(),
 * );
 * console.log(await cache.get(["greeting", "en"], () => "hello")); // "hello"
 * await cache.close();
 * await client.quit();
 * ```
 */
export function fromNodeRedis(client: NodeRedisClient | NodeRedisCluster): RedisLike {
  const c = client as Partial<NodeRedisClient> | null;
  if (c === null || typeof c !== "object" || typeof c.sendCommand !== "function") {
    throw new TypeError(
      "Cannot create the node-redis adapter: 'client' must be a node-redis client or cluster (with sendCommand())",
    );
  }
  const cluster = "masters" in client ? client : undefined;
  const single = cluster === undefined ? client as NodeRedisClient : undefined;
  return {
    send: function sendThroughNodeRedis(command: readonly Arg[], options?: SendOptions): Promise<Reply> {
      const bad = checkArgs(command);
      if (bad !== undefined) return Promise.reject(bad);
      const args: (string | Buffer)[] = new Array(command.length);
      args[0] = nameOf(command);
      for (let i = 1; i < command.length; i++) args[i] = bufferArgument(command[i]!);
      const base = options?.buffers === true ? BYTES : TEXT;
      const signal = options?.signal;
      // node-redis 5+ drops a command still unwritten when its signal aborts,
      // and removes its listener once the command is written. node-redis 4
      // (which reads `signal`) never removes its listener, so it gets none:
      // a long-lived signal would collect one per command.
      const o = signal === undefined ? base : { ...base, abortSignal: signal };
      const start = single !== undefined
        ? () => single.sendCommand(args, o)
        // Never a replica (isReadonly false): the cache re-reads what it
        // just wrote, and a replica may not have it yet.
        : () => {
          const key = firstKey(command);
          return cluster!.sendCommand(key === undefined ? undefined : bufferArgument(key), false, args, o);
        };
      return run(command, options, start);
    },
  };
}
