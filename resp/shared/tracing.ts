/**
 * The diagnostics channels herdless publishes on, created once at module
 * load so a call pays a few property reads to learn that nobody listens.
 * `node:diagnostics_channel` exists under that name on Node, Bun and Deno;
 * Bun's TracingChannel has no `hasSubscribers` of its own, so
 * {@linkcode traced} asks the five channels a TracingChannel is made of.
 *
 * Lives in `resp/shared/` because the command channel is the client's; the
 * cache (above it) imports the others from here, never the other way round.
 *
 * @module
 */
import { channel, tracingChannel } from "node:diagnostics_channel";

/** The parts of a TracingChannel this code uses, as every runtime offers them. */
export interface Traceable<C extends object> {
  readonly start: { readonly hasSubscribers: boolean };
  readonly end: { readonly hasSubscribers: boolean };
  readonly asyncStart: { readonly hasSubscribers: boolean };
  readonly asyncEnd: { readonly hasSubscribers: boolean };
  readonly error: { readonly hasSubscribers: boolean };
  tracePromise<T>(fn: () => Promise<T>, context: C): Promise<T>;
}

/**
 * TracingChannel `herdless:command`: one trace per command a `RedisClient`
 * sends, its context a `CommandTraceContext` (`resp/types.ts`, not named here
 * so that `shared/` imports nothing else of `resp/`).
 */
export const commandChannel = tracingChannel("herdless:command") as unknown as Traceable<object>;
/** TracingChannel `herdless:get`: one trace per `cache.get()`. */
export const getChannel = tracingChannel("herdless:get") as unknown as Traceable<object>;
/** Channel `herdless:event`: every cache event, with its namespace. */
export const eventChannel: { readonly hasSubscribers: boolean; publish(message: unknown): void } = channel(
  "herdless:event",
);

/** True when anything listens to any part of `tc`. */
export function traced(tc: Traceable<never>): boolean {
  return tc.start.hasSubscribers || tc.end.hasSubscribers || tc.asyncStart.hasSubscribers ||
    tc.asyncEnd.hasSubscribers || tc.error.hasSubscribers;
}
