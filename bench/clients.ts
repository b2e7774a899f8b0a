/**
 * One adapter per client under test, each written the way that client's own
 * docs make it fastest: the scenarios call only these four functions, so
 * every client pays the same (negligible) indirection.
 *
 * Batches of SET: ours issues 1,000 `send`s in one tick (they leave in one
 * write); ioredis `pipeline().exec()`; node-redis `multi().execAsPipeline()`
 * (measured here about 1.25x faster than `Promise.all` of 1,000 `set`s
 * issued in one tick, its per-tick auto-pipelining, which
 * `NODE_REDIS_BATCH=all` selects instead); Bun `Promise.all` of 1,000 `set`s
 * (its auto-pipelining).
 *
 * Scripts: ours `Script.run` (EVAL once per connection, then EVALSHA);
 * ioredis `defineCommand`; node-redis `defineScript` through the `scripts`
 * option; Bun has no script helper, so `send("EVALSHA", ...)` after one
 * `SCRIPT LOAD`.
 *
 * @module
 */
import process from "node:process";
import { connect, Script } from "../resp/mod.ts";

/** The small script every client runs with 100 in flight. */
export const LUA = `return redis.call("GET", KEYS[1])`;

/** What a scenario needs from a client. */
export interface BenchClient {
  get(key: string): Promise<unknown>;
  /** Write every key with `value` as one batch and resolve when all are acknowledged. */
  setBatch(keys: readonly string[], value: string): Promise<unknown>;
  /** Run {@linkcode LUA} with `key` as KEYS[1]. */
  script(key: string): Promise<unknown>;
  close(): Promise<unknown>;
}

/** The clients this file can create. `ours` runs on Node and Bun alike. */
export type ClientName = "ours" | "node-redis" | "ioredis" | "bun";

/** Open one connection with the named client. */
export async function openClient(
  name: ClientName,
  url: string,
  resp: 2 | 3,
): Promise<BenchClient> {
  switch (name) {
    case "ours":
      return await ours(url, resp);
    case "node-redis":
      return await nodeRedis(url, resp);
    case "ioredis":
      return await ioredis(url);
    case "bun":
      return await bunNative(url);
  }
}

async function ours(url: string, resp: 2 | 3): Promise<BenchClient> {
  const c = await connect({ url, resp });
  const script = new Script(LUA);
  return {
    get: (key) => c.send(["GET", key]),
    setBatch(keys, value) {
      const replies = new Array<Promise<unknown>>(keys.length);
      for (let i = 0; i < keys.length; i++) {
        replies[i] = c.send(["SET", keys[i]!, value]);
      }
      return Promise.all(replies);
    },
    script: (key) => script.run(c, [key], []),
    close: () => c.close(),
  };
}

async function nodeRedis(url: string, resp: 2 | 3): Promise<BenchClient> {
  const { createClient, defineScript } = await import("redis");
  const c = createClient({
    url,
    RESP: resp,
    scripts: {
      benchGet: defineScript({
        SCRIPT: LUA,
        NUMBER_OF_KEYS: 1,
        parseCommand(parser, key: string) {
          parser.pushKey(key);
        },
        transformReply: (reply: unknown) => reply as never,
      }),
    },
  });
  c.on("error", (error: unknown) => console.error("node-redis:", error));
  await c.connect();
  const viaMulti = process.env.NODE_REDIS_BATCH !== "all";
  return {
    get: (key) => c.get(key),
    setBatch(keys, value) {
      if (viaMulti) {
        const multi = c.multi();
        for (let i = 0; i < keys.length; i++) multi.set(keys[i]!, value);
        return multi.execAsPipeline();
      }
      const replies = new Array<Promise<unknown>>(keys.length);
      for (let i = 0; i < keys.length; i++) replies[i] = c.set(keys[i]!, value);
      return Promise.all(replies);
    },
    script: (key) => c.benchGet(key),
    close: () => c.quit(),
  };
}

async function ioredis(url: string): Promise<BenchClient> {
  const { Redis } = await import("ioredis");
  const c = new Redis(url, { lazyConnect: true });
  c.defineCommand("benchGet", { numberOfKeys: 1, lua: LUA });
  await c.connect();
  const benchGet = (c as unknown as { benchGet(key: string): Promise<unknown> })
    .benchGet.bind(c);
  return {
    get: (key) => c.get(key),
    setBatch(keys, value) {
      const pipe = c.pipeline();
      for (let i = 0; i < keys.length; i++) pipe.set(keys[i]!, value);
      return pipe.exec();
    },
    script: benchGet,
    close: () => c.quit(),
  };
}

/** The part of Bun's built-in client the bench uses (bun-types is not installed). */
interface BunRedis {
  connect(): Promise<void>;
  get(key: string): Promise<string | null>;
  set(key: string, value: string): Promise<unknown>;
  send(command: string, args: string[]): Promise<unknown>;
  close(): void;
}

async function bunNative(url: string): Promise<BenchClient> {
  const bun = (await import("bun" as string)) as {
    RedisClient: new (url: string) => BunRedis;
  };
  const c = new bun.RedisClient(url);
  await c.connect();
  const sha = String(await c.send("SCRIPT", ["LOAD", LUA]));
  return {
    get: (key) => c.get(key),
    setBatch(keys, value) {
      const replies = new Array<Promise<unknown>>(keys.length);
      for (let i = 0; i < keys.length; i++) replies[i] = c.set(keys[i]!, value);
      return Promise.all(replies);
    },
    script: (key) => c.send("EVALSHA", [sha, "1", key]),
    close: () => Promise.resolve(c.close()),
  };
}
