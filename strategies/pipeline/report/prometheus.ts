/**
 * `prometheus()`: the counters of `stats()` in the Prometheus text
 * exposition format (version 0.0.4), for a `/metrics` endpoint, without a
 * client library.
 *
 * @module
 */
import { checkedOptions, show } from "../../../resp/shared/mod.ts";
import type { CacheStats } from "../../events.ts";

/** Anything with `stats()`: a cache built by `pipeline()`. */
export interface StatsSource {
  /** The cache's counters now. */
  stats(): CacheStats;
}

/** Options of {@linkcode prometheus}. */
export interface PrometheusOptions {
  /** Prefix of every metric name (`herdless_hits_total`). @default {"herdless"} */
  prefix?: string;
}

const PROMETHEUS_OPTIONS = Object.keys({ prefix: true } satisfies Record<keyof PrometheusOptions, true>);

// One line of help per metric; the order is the order of the output.
const HELP: Readonly<Record<keyof CacheStats, string>> = {
  hits: "Fresh entries served",
  misses: "Reads that found nothing servable",
  stale: "Stale entries served (swr window, stale-if-error, shed call)",
  earlyRefreshes: "Early refreshes started by xfetch",
  loads: "Origin loads started",
  loadErrors: "Origin loads that failed",
  leasesWon: "Redis leases won",
  waits: "Callers that waited for another owner's load",
  lateRejected: "Publishes rejected because the lease had expired or been invalidated",
  coalesced: "Callers that joined an in-process load",
  shed: "Calls refused by limit()",
  timeouts: "Waits and calls that ran out of time",
  decodeErrors: "Stored values that did not decode",
  refreshesDropped: "Background refreshes dropped at maxRefreshes",
  refreshErrors: "Background refreshes that failed",
  eventErrors: "Exceptions thrown by onEvent",
  nearHits: "Entries served from the near tier",
  nearEntries: "Entries held in the near tier now",
  nearInvalidations: "Near entries dropped on Redis invalidation",
  invalidationMode: "Where invalidations come from: 0 nowhere, 1 client tracking, 2 invalidation messages",
  peeks: "peek() calls",
  sets: "Values written by set()",
  degraded: "Gets served without Redis storing the value: writes refused, or Redis down under onRedisDown local",
  skips: "Loaded values not stored because the loader called skip()",
  softTimeouts: "Callers served the old value after swr's softTimeoutMs",
  notModified: "Loads that answered notModified(): the previous value republished",
  invalid: "Values read from Redis that the schema refused",
};
const GAUGES: ReadonlySet<keyof CacheStats> = new Set(["nearEntries", "invalidationMode"]);
const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

/**
 * The counters of one cache, or of several caches told apart by a `cache`
 * label, as Prometheus text exposition format: a `# HELP` and `# TYPE` line
 * per metric, counters named `<prefix>_<stat>_total` in snake case
 * (`herdless_leases_won_total`), `nearEntries` as the gauge
 * `<prefix>_near_entries`. Serve it with `Content-Type: text/plain; version=0.0.4`.
 *
 * @param caches a cache, or caches by name (each name becomes the label `cache="name"`).
 * @param options the metric name prefix.
 * @returns the exposition text, ending with a newline.
 * @throws {TypeError} when `prefix` is not a valid metric name or a cache has no `stats()`.
 * @example Expose two caches on /metrics
 * ```ts
 * import { connect, pipeline, prometheus } from "@herdless/herdless";
 * const redis = await connect(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
 * const users = pipeline({ redis, ttlMs: 60_000, namespace: "users" });
 * const pages = pipeline({ redis, ttlMs: 60_000, namespace: "pages" });
 * await users.get("prometheus-example", () => "Ada");
 * const text = prometheus({ users, pages });
 * console.log(text.split("\n").find((line) => line.startsWith('herdless_loads_total{cache="users"}')));
 * // herdless_loads_total{cache="users"} 1   (0 if the value was already cached)
 * await Promise.all([users.close(), pages.close()]);
 * await redis.close();
 * ```
 */
export function prometheus(
  caches: StatsSource | Readonly<Record<string, StatsSource>>,
  options?: PrometheusOptions,
): string {
  const prefix =
    checkedOptions<PrometheusOptions>("format metrics", "prometheus()", options, PROMETHEUS_OPTIONS).prefix ??
      "herdless";
  if (typeof prefix !== "string" || !NAME.test(prefix)) {
    throw new TypeError(`Cannot format metrics: 'prefix' must be a Prometheus metric name, got ${show(prefix)}`);
  }
  const single = typeof (caches as StatsSource | undefined)?.stats === "function";
  const sources: [string, StatsSource][] = single
    ? [["", caches as StatsSource]]
    : Object.entries((caches ?? {}) as Record<string, StatsSource>);
  const rows = sources.map(([name, cache]): [string, CacheStats] => {
    if (typeof cache?.stats !== "function") {
      throw new TypeError(`Cannot format metrics: ${show(name)} must be a cache (an object with stats())`);
    }
    return [single ? "" : `{cache="${escapeLabel(name)}"}`, cache.stats()];
  });
  let out = "";
  for (const stat of Object.keys(HELP) as (keyof CacheStats)[]) {
    const gauge = GAUGES.has(stat);
    const name = `${prefix}_${snake(stat)}${gauge ? "" : "_total"}`;
    out += `# HELP ${name} ${HELP[stat]}\n# TYPE ${name} ${gauge ? "gauge" : "counter"}\n`;
    for (const [labels, stats] of rows) out += `${name}${labels} ${stats[stat] ?? 0}\n`;
  }
  return out;
}

function snake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

// The exposition format escapes backslash, double quote and newline in label values.
function escapeLabel(value: string): string {
  return value.replace(/[\\"\n]/g, (c) => (c === "\n" ? "\\n" : `\\${c}`));
}
