/**
 * The cache-level table: hit-path medians of every
 * cache, their ratios to herdless' raw GET, the targets marked MET / NOT MET
 * against the same run, then the coherence lag and the near tier's memory.
 *
 * @module
 */
import { CACHE_LABELS, type CacheName, CACHES, NEAR_CACHES } from "./caches.ts";
import { COHERENCE_LABELS, type CoherenceResult, quantile } from "./coherence.ts";
import { MEMORY_LABELS, type MemoryResult } from "./memory.ts";
import { fmtMiB, fmtRatio, table, unavailableRow } from "./markdown.ts";
import { best, median, ratio, type Series, spread, type TargetResult } from "./report.ts";
import type { CacheScenario } from "./scenarios.ts";

/** Everything the cache section shows. */
export interface CacheSection {
  series: readonly Series[];
  reps: number;
  /** Why near() rows have no figure, when they have none. */
  nearWhy: string | undefined;
  /** Configuration of each cache as its worker reported it. */
  configs: Partial<Record<CacheName, string>>;
  coherence: readonly CoherenceResult[] | undefined;
  coherenceWhy?: string;
  coherenceMethod?: string;
  memory: readonly MemoryResult[] | undefined;
}

const find = (
  series: readonly Series[],
  scenario: CacheScenario,
  cache: CacheName,
) => series.find((s) => s.runtime === "node" && s.scenario === scenario && s.client === cache);

function ops(
  series: readonly Series[],
  scenario: CacheScenario,
  cache: CacheName,
  pick = median,
): number | undefined {
  const s = find(series, scenario, cache);
  return s === undefined || s.opsPerSec.length === 0 ? undefined : pick(s.opsPerSec);
}

const fmtOps = (n: number | undefined) =>
  n === undefined || !Number.isFinite(n)
    ? "-"
    : n >= 10_000
    ? `${Math.round(n / 1000).toLocaleString("en-US")}k/s`
    : `${(n / 1000).toFixed(1)}k/s`;
const fmtUs = (us: number | undefined) =>
  us === undefined ? "-" : us >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${Math.round(us)} µs`;
/** A reason cut to a table cell: the first 90 characters, at a word boundary. */
export function short(reason: string): string {
  if (reason.length <= 90) return reason;
  return reason.slice(0, reason.lastIndexOf(" ", 90)) + " …";
}
const verdict = (
  t: TargetResult,
) => (t.met === undefined ? (t.note ?? "n/a") : t.met ? "MET" : "NOT MET");

/** The cache-level targets this run has figures for (or says why not). */
export function cacheTargets(c: CacheSection): TargetResult[] {
  const out: TargetResult[] = [];
  const scenarios: [CacheScenario, string][] = [
    ["cache-100", "100 in flight"],
    ["cache-seq", "sequential"],
  ];
  const has = (scenario: CacheScenario) => c.series.some((s) => s.scenario === scenario);
  const atLeast = (
    name: string,
    a: CacheName,
    b: CacheName,
    scenario: CacheScenario,
    min: number,
  ) => {
    const r = ratio(ops(c.series, scenario, a), ops(c.series, scenario, b));
    const rb = ratio(
      ops(c.series, scenario, a, best),
      ops(c.series, scenario, b, best),
    );
    const why = NEAR_CACHES.includes(a) && c.nearWhy !== undefined ? `not available: ${short(c.nearWhy)}` : undefined;
    out.push({
      name,
      ratio: r,
      best: rb,
      want: `>= ${min.toFixed(2)}x`,
      met: r === undefined ? undefined : r >= min,
      ...(r === undefined ? { note: why ?? "n/a (a side has no figure)" } : {}),
    });
  };
  // The call users write (tuple, closure and { timeoutMs } per call) is what the targets judge, not a best case.
  for (const near of ["near-cl", "near-full"] as const) {
    for (const [scenario, label] of scenarios) {
      if (!has(scenario) && c.nearWhy === undefined) continue;
      atLeast(
        `near hit (${CACHE_LABELS[near]}), ${label}: / node-redis clientSideCache`,
        near,
        "node-redis-csc",
        scenario,
        4,
      );
      atLeast(
        `near hit (${CACHE_LABELS[near]}), ${label}: / Bentocache L1 only`,
        near,
        "bento-l1",
        scenario,
        20,
      );
    }
  }
  for (const [scenario, label] of scenarios) {
    if (!has(scenario) && c.nearWhy === undefined) continue;
    atLeast(
      `near hit, README call / string id built once (within 1.3x), ${label}`,
      "near-cl",
      "near-cl-str",
      scenario,
      1 / 1.3,
    );
  }
  for (const [scenario, label] of scenarios) {
    if (!has(scenario)) continue;
    // Against a raw GET on a tracked connection: the server's tracking cost is then on both sides.
    atLeast(
      `remote hit (${CACHE_LABELS.full}), ${label}: / raw GET with CLIENT TRACKING on`,
      "full",
      "raw-get-tracking",
      scenario,
      0.85,
    );
  }
  // A near entry should cost at most what node-redis' clientSideCache pays per entry, RSS and heap.
  const perEntry = (variant: string, field: "rssBytes" | "heapUsedBytes") => {
    const m = c.memory?.find((x) => x.variant === variant);
    const [first, filled] = m?.steps ?? [];
    return m === undefined || first === undefined || filled === undefined
      ? undefined
      : (filled[field] - first[field]) / m.entries;
  };
  for (
    const [field, what] of [["rssBytes", "RSS"], [
      "heapUsedBytes",
      "V8 heap",
    ]] as const
  ) {
    if (c.memory === undefined) continue;
    const r = ratio(
      perEntry("herdless", field),
      perEntry("node-redis-csc", field),
    );
    out.push({
      name: `near entry memory (${what}): herdless / node-redis clientSideCache`,
      ratio: r,
      best: undefined,
      want: "<= 1.00x",
      met: r === undefined ? undefined : r <= 1,
      ...(r === undefined ? { note: "n/a (a side has no figure)" } : {}),
    });
  }
  if (c.coherence !== undefined || c.coherenceWhy !== undefined) {
    const r = c.coherence?.find((x) => x.variant === "herdless");
    const p99 = r === undefined || r.error !== undefined ? undefined : quantile(r.lagUs, 0.99);
    out.push({
      name: "coherence lag p99 (herdless near(), loopback), ms",
      ratio: p99 === undefined ? undefined : p99 / 1000,
      best: undefined,
      want: "<= 2 ms",
      met: p99 === undefined ? undefined : p99 <= 2000 && (r?.timeouts ?? 0) === 0,
      ...(p99 === undefined
        ? {
          note: `not available: ${short(r?.error ?? c.coherenceWhy ?? "no figure")}`,
        }
        : {}),
    });
  }
  return out;
}

/** The cache section as Markdown. */
export function cacheMarkdown(c: CacheSection): string {
  const out: string[] = [];
  const ran = c.series.some((s) => s.scenario === "cache-100" || s.scenario === "cache-seq");
  if (ran || c.nearWhy !== undefined) {
    out.push(
      `Cache level on Node: \`get(key, loader)\` hits, 1,000 keys, 120-byte JSON values, ops/s (median of ${c.reps}; ± is half the spread when it reaches 10%; ratios to herdless' raw GET)`,
      "",
    );
    const cell = (scenario: CacheScenario, cache: CacheName) => {
      const s = find(c.series, scenario, cache);
      if (s === undefined) return "-";
      if (s.opsPerSec.length === 0) {
        return s.errors.length > 0 ? `error: ${short(s.errors[0]!)}` : "-";
      }
      const sp = spread(s.opsPerSec);
      return `${fmtOps(median(s.opsPerSec))}${sp >= 0.1 ? ` (±${Math.round((sp * 100) / 2)}%)` : ""}`;
    };
    const rows = CACHES.map((cache) => {
      if (NEAR_CACHES.includes(cache) && c.nearWhy !== undefined) {
        return unavailableRow(CACHE_LABELS[cache], short(c.nearWhy), 4);
      }
      const r = (scenario: CacheScenario) =>
        fmtRatio(
          ratio(
            ops(c.series, scenario, cache),
            ops(c.series, scenario, "raw-get"),
          ),
        );
      const rss = find(c.series, "cache-100", cache);
      return [
        CACHE_LABELS[cache],
        cell("cache-100", cache),
        r("cache-100"),
        cell("cache-seq", cache),
        r("cache-seq"),
        fmtMiB(
          rss && rss.peakRssBytes.length > 0 ? median(rss.peakRssBytes) : undefined,
        ),
      ];
    });
    out.push(
      table([
        "cache, hit path",
        "100 in flight",
        "vs raw GET",
        "sequential",
        "vs raw GET",
        "peak RSS (100 in flight)",
      ], rows),
      "",
    );
    if (c.nearWhy !== undefined) {
      out.push(`near() rows not available: ${c.nearWhy}`, "");
    }
    const configs = CACHES.filter((k) => c.configs[k] !== undefined).map((k) =>
      `- ${CACHE_LABELS[k]}: ${c.configs[k]}`
    );
    if (configs.length > 0) {
      out.push(
        "How each cache was configured (as its worker reported):",
        "",
        ...configs,
        "",
      );
    }
  }

  if (c.coherence !== undefined || c.coherenceWhy !== undefined) {
    out.push(
      "Coherence lag: a write acknowledged in one process until another process' near tier serves the new value",
      "",
    );
    if (c.coherenceMethod !== undefined) out.push(c.coherenceMethod, "");
    const rows = (c.coherence ?? []).map((r) => {
      if (r.error !== undefined) {
        return unavailableRow(COHERENCE_LABELS[r.variant], short(r.error), 7);
      }
      const q = (xs: number[], p: number) => fmtUs(quantile(xs, p));
      return [
        COHERENCE_LABELS[r.variant],
        `${r.lagUs.length.toLocaleString("en-US")} of ${r.writes.toLocaleString("en-US")}`,
        q(r.lagUs, 0.5),
        q(r.lagUs, 0.99),
        fmtUs(r.lagUs.at(-1)),
        `${q(r.fromSendUs, 0.5)} / ${q(r.fromSendUs, 0.99)}`,
        r.droppedUs === undefined || r.droppedUs.length === 0
          ? "-"
          : `${q(r.droppedUs, 0.5)} / ${q(r.droppedUs, 0.99)} (${r.droppedUs.length.toLocaleString("en-US")})`,
        String(r.timeouts + (r.regressions ?? 0)),
        r.pollUs === undefined ? "-" : `${r.pollUs.toFixed(1)} µs`,
      ];
    });
    if (c.coherenceWhy !== undefined && rows.length === 0) {
      rows.push(unavailableRow("herdless", c.coherenceWhy, 7));
    }
    out.push(
      table(
        [
          "reader / writer",
          "writes observed",
          "p50",
          "p99",
          "max",
          "from send p50 / p99",
          "entry dropped p50 / p99 (writes)",
          "timeouts + regressions",
          "reader poll period",
        ],
        rows,
      ),
      "",
    );
  }

  if (c.memory !== undefined) {
    for (const m of c.memory) {
      const label = MEMORY_LABELS[m.variant].replace(
        /N\b/g,
        m.entries.toLocaleString("en-US"),
      );
      out.push(
        `Near-tier memory: ${label}, ${m.entries.toLocaleString("en-US")} entries of 120 bytes (RSS after GC)`,
        "",
      );
      if (m.error !== undefined) {
        out.push(
          `${m.steps.length >= 2 ? "cut short" : "not available"}: ${short(m.error)}`,
          "",
        );
        if (m.steps.length < 2) continue;
      }
      const first = m.steps[0];
      const rows = m.steps.map((s) => [
        s.step,
        fmtMiB(s.rssBytes),
        first === undefined ? "-" : `${s.rssBytes >= first.rssBytes ? "+" : ""}${fmtMiB(s.rssBytes - first.rssBytes)}`,
        fmtMiB(s.heapUsedBytes),
        s.nearEntries === undefined ? "-" : s.nearEntries.toLocaleString("en-US"),
        s.trackingKeys === undefined
          ? "-"
          : `${s.trackingKeys.toLocaleString("en-US")}${
            first?.trackingKeys === undefined || s === first
              ? ""
              : ` (${s.trackingKeys >= first.trackingKeys ? "+" : ""}${
                (s.trackingKeys - first.trackingKeys).toLocaleString("en-US")
              })`
          }`,
      ]);
      out.push(
        table([
          "step",
          "RSS",
          "vs before",
          "V8 heap used",
          "entries held",
          "tracking_total_keys",
        ], rows),
        "",
      );
      const filled = m.steps[1];
      if (first !== undefined && filled !== undefined) {
        out.push(
          `Per entry: ${Math.round((filled.rssBytes - first.rssBytes) / m.entries)} bytes of RSS, ${
            Math.round((filled.heapUsedBytes - first.heapUsedBytes) / m.entries)
          } bytes of V8 heap.`,
          "",
        );
      }
    }
  }

  const ts = cacheTargets(c);
  if (ts.length > 0) {
    out.push("Targets (cache level)", "");
    out.push(
      table(
        ["target", "medians", "best repetitions", "want", "verdict (medians)"],
        ts.map((
          t,
        ) => [
          t.name,
          t.name.endsWith(", ms") ? (t.ratio === undefined ? "-" : t.ratio.toFixed(2)) : fmtRatio(t.ratio),
          fmtRatio(t.best),
          t.want,
          verdict(t),
        ]),
      ),
      "",
    );
    out.push(
      `${ts.filter((t) => t.met === true).length} of ${ts.length} targets met.`,
    );
  }
  return out.join("\n");
}
