/**
 * {@linkcode fromBunRedis}: Bun's built-in `RedisClient` as a
 * {@linkcode RedisLike}.
 *
 * @module
 */
import type { Arg, RedisLike, Reply, SendOptions } from "../types.ts";
import { checkArgs } from "../connection/mod.ts";
import { nameOf, numberText, run } from "./common.ts";

/**
 * What {@linkcode fromBunRedis} calls on Bun's `RedisClient` (`import {
 * RedisClient, redis } from "bun"`). Bun's own declaration types `send`'s
 * arguments as strings; Bun writes `Uint8Array` arguments byte for byte
 * (the adapter's tests check it), which binary values need.
 */
export interface BunRedisClient {
  /** Send any command; every string of the reply is decoded to a JS string. */
  send(command: string, args: (string | Uint8Array)[]): Promise<unknown>;
  /** `GET key` with the value as bytes. */
  getBuffer(key: string | Uint8Array): Promise<Uint8Array | null>;
}

/**
 * Use Bun's built-in `RedisClient` (tested with Bun 1.4.5; `redis`, the
 * default client, or `new RedisClient(url)`) wherever herdless takes a
 * {@linkcode RedisLike}: as a pipeline's `redis`, or for `Script.run`. Under
 * Bun only. The client stays yours: close it as you do now.
 *
 * - A server error rejects with `RedisReplyError` (`code` is `"NOSCRIPT"`,
 *   `"WRONGTYPE"`...; Bun's own `code` is kept on the `cause`), and one
 *   inside an `EXEC` reply is such an error in place; Bun's other failures
 *   (a closed connection) pass through unchanged.
 * - `timeoutMs` rejects with `TimeoutError` that long after the call and
 *   `signal` with `signal.reason`; the command may still run on the server,
 *   as with herdless' own client (Bun's `send` takes no signal).
 * - `buffers: true` is honoured for `GET key` only, through `getBuffer`:
 *   Bun's `send` decodes every string of every reply to a JS string and
 *   offers no way to get the bytes. Any other command with `buffers: true`
 *   rejects with a `TypeError` rather than return text where bytes were
 *   asked for. The cache's only bytes read is `GET`, so the `"bytes"` codec
 *   works.
 * - Replies are what Bun decodes over RESP3: maps are already objects
 *   without a prototype; RESP3 attributes are not reported (`onAttribute` is
 *   never called).
 * - The cache's lease waiters poll for publications, since an adapter cannot
 *   push; give the pipeline a herdless RESP3 client as `wakeups` to have
 *   them woken at once.
 *
 * @param client Bun's `RedisClient`.
 * @returns an object whose `send(command, options)` runs the command on `client`.
 * @throws {TypeError} when `client` has no `send` and `getBuffer` functions.
 *
 * @example A cache over Bun's client
 * ```ts
 * import { RedisClient } from "bun";
 * import { coalesce, fromBunRedis, lease, pipeline } from "@herdless/herdless";
 *
 * const client = new RedisClient(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
 * const cache = pipeline<string>(
 *   { redis: fromBunRedis(client), ttlMs: 60_000, namespace: "bun-example" },
 *   coalesce(),
 *   lease(),
 * );
 * console.log(await cache.get(["greeting", "en"], () => "hello")); // "hello"
 * await cache.close();
 * client.close();
 * ```
 */
export function fromBunRedis(client: BunRedisClient): RedisLike {
  const c = client as Partial<BunRedisClient> | null;
  if (c === null || typeof c !== "object" || typeof c.send !== "function" || typeof c.getBuffer !== "function") {
    throw new TypeError(
      "Cannot create the Bun adapter: 'client' must be Bun's RedisClient (with send() and getBuffer())",
    );
  }
  return {
    send: function sendThroughBun(command: readonly Arg[], options?: SendOptions): Promise<Reply> {
      const bad = checkArgs(command);
      if (bad !== undefined) return Promise.reject(bad);
      const name = nameOf(command);
      const args: (string | Uint8Array)[] = new Array(command.length - 1);
      for (let i = 1; i < command.length; i++) {
        const arg = command[i]!;
        args[i - 1] = typeof arg === "number" ? numberText(arg) : arg;
      }
      let start: () => Promise<unknown>;
      if (options?.buffers !== true) start = () => client.send(name, args);
      else if (args.length === 1 && name.toUpperCase() === "GET") start = () => client.getBuffer(args[0]!);
      else {
        return Promise.reject(
          new TypeError(
            `Cannot send ${name.toUpperCase()} with buffers: Bun's RedisClient returns bytes only for GET ` +
              "(getBuffer); its send() decodes every reply to strings",
          ),
        );
      }
      return run(command, options, start);
    },
  };
}
