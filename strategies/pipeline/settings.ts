/**
 * A pipeline's options, checked once when `pipeline()` runs: every setting
 * validated with its name in the message, every default filled in.
 *
 * @module
 */
import { checkedOptions, func, positiveInt, show } from "../../resp/shared/mod.ts";
import type { RedisLike } from "../../resp/types.ts";
import { resolveCodec, type ResolvedCodec } from "../codec/mod.ts";
import type { CacheEvent } from "../events.ts";
import type { PipelineOptions } from "../options.ts";
import type { StandardSchemaV1 } from "../schema.ts";
import type { Identity, WakeupSource } from "../types.ts";
import { checkWindow } from "../limits.ts";
import { checkNamespace, isStandardSchema } from "./read/mod.ts";

/** A pipeline's settings, checked. */
export interface Settings {
  readonly redis: RedisLike;
  readonly ttlMs: number;
  readonly namespace: string;
  /** Where publications and invalidations are announced: `<namespace>:published`. */
  readonly channel: string;
  readonly negativeTtlMs: number;
  readonly commandTimeoutMs: number;
  readonly maxValueBytes: number;
  readonly failOpen: boolean;
  readonly codec: ResolvedCodec;
  readonly wakeups: WakeupSource;
  /** The local monotonic clock (durations only). */
  readonly now: () => number;
  /** True when `now` is the default `performance.now()`: clock estimates are then shared by the caches of a process. */
  readonly defaultNow: boolean;
  readonly random: () => number;
  readonly onEvent: ((event: CacheEvent) => void) | undefined;
  readonly waitUntil: ((work: Promise<unknown>) => void) | undefined;
  readonly label: ((identity: Identity) => string) | undefined;
  /** What a get does while Redis cannot be reached. */
  readonly onRedisDown: "error" | "local";
  readonly probeMs: number;
  readonly schema: StandardSchemaV1 | undefined;
}

const WHERE = "create pipeline";

/** Every option of `pipeline()`: any other key is refused, naming the close one. */
const PIPELINE_OPTIONS = Object.keys(
  {
    redis: true,
    ttlMs: true,
    namespace: true,
    negativeTtlMs: true,
    codec: true,
    commandTimeoutMs: true,
    wakeups: true,
    maxValueBytes: true,
    failOpen: true,
    now: true,
    random: true,
    onEvent: true,
    waitUntil: true,
    label: true,
    onRedisDown: true,
    probeMs: true,
    schema: true,
  } satisfies Record<keyof PipelineOptions<unknown>, true>,
);

/** Check `options`; the first bad setting throws, named. */
export function checkSettings(options: PipelineOptions<unknown>): Settings {
  const o = checkedOptions<PipelineOptions<unknown>>(WHERE, "pipeline()", options, PIPELINE_OPTIONS);
  const redis = o.redis;
  if (redis === null || typeof redis !== "object" || typeof redis.send !== "function") {
    throw new TypeError("Cannot create pipeline: 'redis' must be an object with a send(command, options) function");
  }
  const ttlMs = checkWindow(WHERE, "ttlMs", o.ttlMs, 1);
  const namespace = checkNamespace(o.namespace ?? "herdless");
  const negativeTtlMs = checkWindow(WHERE, "negativeTtlMs", o.negativeTtlMs ?? 0, 0);
  const commandTimeoutMs = positiveInt(WHERE, "commandTimeoutMs", o.commandTimeoutMs ?? 1000);
  const maxValueBytes = positiveInt(WHERE, "maxValueBytes", o.maxValueBytes ?? 512 * 1024 * 1024);
  const failOpen = o.failOpen ?? true;
  if (typeof failOpen !== "boolean") throw new TypeError(`Cannot create pipeline: 'failOpen' must be a boolean`);
  const codec = resolveCodec(o.codec);
  const onRedisDown = o.onRedisDown ?? "error";
  if (onRedisDown !== "error" && onRedisDown !== "local") {
    throw new TypeError(`Cannot create pipeline: 'onRedisDown' must be "error" or "local", got ${show(onRedisDown)}`);
  }
  const probeMs = positiveInt(WHERE, "probeMs", o.probeMs ?? 1000);
  if (o.schema !== undefined && !isStandardSchema(o.schema)) {
    throw new TypeError(
      `Cannot create pipeline: 'schema' must be a Standard Schema (an object with ["~standard"].validate and version 1, as zod, valibot and arktype make), got ${
        show(o.schema)
      }`,
    );
  }
  const wakeups = o.wakeups ?? "auto";
  if (wakeups !== "auto" && wakeups !== "poll" && typeof (wakeups as { onPush?: unknown })?.onPush !== "function") {
    throw new TypeError(`Cannot create pipeline: 'wakeups' must be "auto", "poll" or a RESP3 client with onPush()`);
  }
  return {
    redis,
    ttlMs,
    namespace,
    channel: `${namespace}:published`,
    negativeTtlMs,
    commandTimeoutMs,
    maxValueBytes,
    failOpen,
    codec,
    wakeups,
    now: checkNow(func<() => number>(WHERE, "now", o.now ?? (() => performance.now()))),
    defaultNow: o.now === undefined,
    random: checkRandom(func<() => number>(WHERE, "random", o.random ?? Math.random)),
    onEvent: o.onEvent === undefined ? undefined : func<(e: CacheEvent) => void>(WHERE, "onEvent", o.onEvent),
    waitUntil: o.waitUntil === undefined
      ? undefined
      : func<(work: Promise<unknown>) => void>(WHERE, "waitUntil", o.waitUntil),
    label: o.label === undefined ? undefined : func<(id: Identity) => string>(WHERE, "label", o.label),
    onRedisDown,
    probeMs,
    schema: o.schema as StandardSchemaV1 | undefined,
  };
}

// A clock that does not tell time fails later, where it is read, naming
// nothing (a publication's arguments, a deadline): asked once here instead.
function checkNow(now: () => number): () => number {
  const t = now();
  if (typeof t !== "number" || !Number.isFinite(t)) {
    throw new TypeError(`Cannot create pipeline: 'now' must return a finite number of ms, got ${show(t)}`);
  }
  return now;
}

// One draw where the source is given: a source that cannot draw is refused
// here, not at the first publish that jitter() draws for (or never, without it).
function checkRandom(random: () => number): () => number {
  const r = random();
  if (typeof r !== "number" || !(r >= 0 && r <= 1)) {
    throw new RangeError(`Cannot create pipeline: 'random' must return a number in [0, 1], got ${show(r)}`);
  }
  return random;
}
