/**
 * {@linkcode fromIoredis}: an ioredis `Redis` or `Cluster` as a
 * {@linkcode RedisLike}, so a cache can run over the connections an
 * application already has.
 *
 * @module
 */
import type { Buffer } from "node:buffer";
import type { Arg, RedisLike, Reply, SendOptions } from "../types.ts";
import { checkArgs } from "../connection/mod.ts";
import { bufferArgument, nameOf, run } from "./common.ts";

/**
 * What {@linkcode fromIoredis} calls on an ioredis client: `call` and
 * `callBuffer`, which ioredis 5 and 6 offer on both `Redis` and `Cluster` (a
 * cluster routes them by the command's keys, `EVAL`/`EVALSHA` included).
 * Declared here so herdless depends on no ioredis version.
 */
export interface IoredisClient {
  /** Send any command; bulk strings come back as strings. */
  call(command: string, ...args: (string | Buffer | number)[]): Promise<unknown>;
  /** Send any command; bulk (and simple) strings come back as `Buffer`s. */
  callBuffer(command: string, ...args: (string | Buffer | number)[]): Promise<unknown>;
}

/**
 * Use an ioredis 5 or 6 client (`Redis` or `Cluster`) wherever herdless
 * takes a {@linkcode RedisLike}: as a pipeline's `redis`, or for
 * `Script.run`. The client stays yours: connect, configure and close it as
 * you do now.
 *
 * - A server error rejects with `RedisReplyError` (`code` is `"NOSCRIPT"`,
 *   `"WRONGTYPE"`...), and one inside an `EXEC` reply is such an error in
 *   place; ioredis' own failures (a closed connection,
 *   `MaxRetriesPerRequestError`) pass through unchanged.
 * - `timeoutMs` rejects with `TimeoutError` that long after the call and
 *   `signal` with `signal.reason`; the command may still run on the server,
 *   as with herdless' own client (ioredis cannot withdraw a queued command).
 * - `buffers: true` uses `callBuffer`: every bulk string comes back as bytes
 *   (simple strings such as `OK` too: ioredis does not tell them apart).
 * - Replies are what ioredis decodes: integers beyond 2^53 lose precision
 *   unless the client has `stringNumbers: true` (they are then strings);
 *   ioredis 6 over RESP3 with `replyMapping: "resp3"` returns maps, which
 *   become objects without a prototype. RESP3 attributes are not reported
 *   (`onAttribute` is never called).
 * - The cache's lease waiters poll for publications, since an adapter cannot
 *   push; give the pipeline a herdless RESP3 client as `wakeups` to have
 *   them woken at once. An ioredis `keyPrefix` applies to the cache's keys
 *   but not to what such a client listens for: leave `wakeups` at its
 *   default (polling) with a prefixed client.
 *
 * @param client an ioredis `Redis` or `Cluster` instance.
 * @returns an object whose `send(command, options)` runs the command on `client`.
 * @throws {TypeError} when `client` has no `call` and `callBuffer` functions.
 *
 * @example A cache over an ioredis client
 * ```ts
 * import { Redis } from "ioredis";
 * import { coalesce, fromIoredis, lease, pipeline } from "@herdless/herdless";
 *
 * const client = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
 * const cache = pipeline<string>(
 *   { redis: fromIoredis(client), ttlMs: 60_000, namespace: "ioredis-example" },
 *   coalesce(),
 *   lease(),
 * );
 * console.log(await cache.get(["greeting", "en"], () => "hello")); // "hello"
 * await cache.close();
 * client.disconnect();
 * ```
 */
export function fromIoredis(client: IoredisClient): RedisLike {
  const c = client as Partial<IoredisClient> | null;
  if (c === null || typeof c !== "object" || typeof c.call !== "function" || typeof c.callBuffer !== "function") {
    throw new TypeError(
      "Cannot create the ioredis adapter: 'client' must be an ioredis Redis or Cluster (with call() and callBuffer())",
    );
  }
  return {
    send: function sendThroughIoredis(command: readonly Arg[], options?: SendOptions): Promise<Reply> {
      const bad = checkArgs(command);
      if (bad !== undefined) return Promise.reject(bad);
      const name = nameOf(command);
      const args: (string | Buffer)[] = new Array(command.length - 1);
      for (let i = 1; i < command.length; i++) args[i - 1] = bufferArgument(command[i]!);
      const start = options?.buffers === true
        ? () => client.callBuffer(name, ...args)
        : () => client.call(name, ...args);
      return run(command, options, start);
    },
  };
}
