/**
 * Lua scripts run by SHA1, with the script body sent only when the server may
 * not have it.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { explainNoPerm, explainScriptFailure } from "./connection/mod.ts";
import { isRedisReplyError } from "./errors.ts";
import type { Arg, RedisLike, Reply, SendOptions } from "./types.ts";

/**
 * A Lua script. Its SHA1 is computed locally, once. The first `run` on a
 * connection (and the first after each reconnect of a {@linkcode RedisClient},
 * whose server may have restarted) sends `EVAL`; later runs send `EVALSHA`. A
 * `NOSCRIPT` reply (SCRIPT FLUSH, a failover, another cluster node) is
 * answered by one `EVAL`, which loads and runs in a single step: `SCRIPT
 * LOAD` then `EVALSHA` is not atomic and could fail again. A command the
 * script calls that the user's ACL refuses is a `NOPERM` `RedisReplyError`
 * naming that command, its line and the rule to add (Redis itself answers
 * `ERR` naming only the script).
 *
 * @example Compare-and-delete
 * ```ts
 * import { connect, Script } from "@herdless/herdless";
 * const release = new Script(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`);
 * const redis = await connect(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
 * console.log(await release.run(redis, ["lock"], ["my-token"])); // 0
 * await redis.close();
 * ```
 */
export class Script {
  /** The script's SHA1, lowercase hex, as Redis computes it. */
  readonly sha: string;
  /** The script's source. */
  readonly lua: string;
  // Which connection generation last received the body. A WeakMap so a
  // closed client can be collected along with its entry.
  #sentTo = new WeakMap<object, number>();
  // Servers (by `serverName`) that ran this script's EVAL in this process: a
  // client opened per request (a Cloudflare Worker) sends EVALSHA at once,
  // and a NOSCRIPT (a restarted server) still falls back to EVAL.
  #servers = new Set<string>();

  /**
   * A script from its source; its SHA1 is computed here, once, locally.
   *
   * @param lua the script's source.
   * @throws {TypeError} when `lua` is not a non-empty string.
   */
  constructor(lua: string) {
    if (typeof lua !== "string" || lua.length === 0) {
      throw new TypeError("Cannot create Script: 'lua' must be a non-empty string");
    }
    this.lua = lua;
    this.sha = createHash("sha1").update(lua).digest("hex");
  }

  /**
   * Run the script with `KEYS` and `ARGV`: `EVALSHA`, or `EVAL` when the
   * server may not have it (first run on a connection, after a reconnect,
   * on a `NOSCRIPT` reply).
   *
   * @param redis the connection (our client, a cluster client or any `RedisLike`).
   * @param keys the keys it touches (`KEYS`); on a cluster they must share a slot.
   * @param args its other arguments (`ARGV`).
   * @param options sent with each command: timeout, signal, buffers.
   * @returns the script's reply.
   * @throws {RedisReplyError} (as a rejection) for a Lua error or a server refusal.
   * @example Run twice: EVAL, then EVALSHA
   * ```ts
   * import { connect, Script } from "@herdless/herdless";
   * const incrBy = new Script(`return redis.call("INCRBY", KEYS[1], ARGV[1])`);
   * const redis = await connect(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
   * console.log(await incrBy.run(redis, ["counter"], [5]), await incrBy.run(redis, ["counter"], [5])); // 5 10 (on an empty database)
   * await redis.close();
   * ```
   */
  run(redis: RedisLike, keys: readonly Arg[], args: readonly Arg[], options?: SendOptions): Promise<Reply> {
    // Not an async function, and the command built without spreads: with 100
    // runs in flight, each run's async frame, its promise and the spread's
    // intermediate arrays survived the young generation's collections and
    // grew it, and peak memory with it.
    try {
      const generation = (redis as { generation?: number }).generation ?? 0;
      const explain = (error: unknown): never => {
        throw this.#explain(error, keys);
      };
      if (this.#sentTo.get(redis) !== generation) {
        this.#sentTo.set(redis, generation);
        const server = (redis as { serverName?: unknown }).serverName;
        if (typeof server !== "string" || !this.#servers.has(server)) {
          const ran = Promise.resolve(redis.send(scriptCommand("EVAL", this.lua, keys, args), options)).catch(explain);
          if (typeof server !== "string") return ran;
          return ran.then((reply) => {
            this.#servers.add(server);
            return reply;
          });
        }
      }
      return Promise.resolve(redis.send(scriptCommand("EVALSHA", this.sha, keys, args), options)).catch((error) => {
        // Explained once, by the catch below (explaining here too would wrap
        // the script's NOPERM a second time, as if EVAL itself were refused).
        if (!isRedisReplyError(error) || error.code !== "NOSCRIPT") throw error;
        // The server lost its scripts (SCRIPT FLUSH, failover). Runs issued
        // from here on follow this EVAL on the connection, so EVALSHA is safe
        // for them; commands issued between the failed EVALSHA and this retry
        // have already run, so the retried script runs after them.
        return redis.send(scriptCommand("EVAL", this.lua, keys, args), options);
      }).catch(explain);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  // The keys are known here, so a refused key or channel names its pattern.
  #explain(error: unknown, keys: readonly Arg[]): unknown {
    if (!isRedisReplyError(error)) return error;
    // The connection already explained a NOPERM without the keys: explain the server's own reply again.
    if (error.code === "NOPERM") {
      return explainNoPerm(isRedisReplyError(error.cause) ? error.cause : error, "eval", keys);
    }
    return explainScriptFailure(error, this, keys) ?? error;
  }
}

/** `[verb, body, keys.length, ...keys, ...args]`, in one allocation. */
function scriptCommand(verb: string, body: string, keys: readonly Arg[], args: readonly Arg[]): Arg[] {
  const command = new Array<Arg>(3 + keys.length + args.length);
  command[0] = verb;
  command[1] = body;
  command[2] = keys.length;
  for (let i = 0; i < keys.length; i++) command[3 + i] = keys[i]!;
  for (let i = 0; i < args.length; i++) command[3 + keys.length + i] = args[i]!;
  return command;
}
