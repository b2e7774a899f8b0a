/**
 * Redis commands per request: a proxy of a client that counts every
 * `send()` and forwards everything else to the client itself, so herdless
 * still sees one of our RESP3 clients (client tracking, lease wake-ups)
 * and a recipe's polling shows up as the commands it really sends. Rows run
 * side by side on one server, so INFO commandstats could not tell them apart.
 *
 * @module
 */
import type { Arg, RedisLike, SendOptions } from "../../../resp/mod.ts";

/** A client and the count of commands sent through it. */
export interface Counted<T extends RedisLike> {
  readonly redis: T;
  readonly sent: () => number;
}

/**
 * Wrap `client`: `sent()` counts its `send()` calls from now on, and
 * `failed`, when given, hears every error a command is answered with.
 */
export function counted<T extends RedisLike>(client: T, failed?: (error: unknown) => void): Counted<T> {
  let n = 0;
  const send = (command: readonly Arg[], options?: SendOptions) => {
    n++;
    const reply = client.send(command, options);
    // A branch of its own: the caller still gets the reply, and handles its rejection.
    if (failed !== undefined) reply.catch(failed);
    return reply;
  };
  const redis = new Proxy(client, {
    get(target, prop) {
      if (prop === "send") return send;
      const v = Reflect.get(target, prop, target);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
  return { redis, sent: () => n };
}
