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

/** Wrap `client`: `sent()` counts its `send()` calls from now on. */
export function counted<T extends RedisLike>(client: T): Counted<T> {
  let n = 0;
  const send = (command: readonly Arg[], options?: SendOptions) => {
    n++;
    return client.send(command, options);
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
