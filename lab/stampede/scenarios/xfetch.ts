/**
 * Scenario "xfetch": XFetch against its paper (Vattani, Chierichetti,
 * Lowenstein, "Optimal Probabilistic Cache Stampede Prevention", PVLDB 8(8),
 * 2015). One hot key read at a steady rate; rows: xfetch() with beta 0.5, 1
 * and 2, alone and with lease(). For each row: refresh rounds (origin calls
 * that start before the round's first call has published belong to one
 * round), origin calls per round (the paper's stampede size), and the gap:
 * how long before the entry's expiry a round started (the paper's waste:
 * the part of the TTL thrown away), next to what the paper's model
 * predicts for reads arriving as a Poisson stream of rate r and a load of
 * fixed duration delta, derived below.
 *
 * The model: a read with remaining time D refreshes with probability
 * exp(-D / (delta * beta)), so triggers form a Poisson process of intensity
 * r * exp(-D / (delta * beta)); the first comes at a remaining time whose
 * mean is delta * beta * (ln(r * delta * beta) + 0.577) (Euler's gamma),
 * and uncoordinated readers add exp(1 / beta) - 1 more triggers while the
 * first load runs. herdless' xfetch() alone already merges the triggers of
 * one cache (at most one per cache, 4 here); lease() makes it one in all.
 *
 * Full lab only (`--only xfetch` runs it on its own): a dozen expiries per
 * row take about 25 s.
 *
 * @module
 */
import { lease, xfetch } from "../../../mod.ts";
import { strategySet } from "../rows/sets.ts";
import { runSteady } from "../load/steady.ts";
import { layerSettings } from "../rows/layers.ts";
import type { LabContext, RowResult, Scenario, ScenarioResult } from "../types.ts";

const BETAS = [0.5, 1, 2];
const GAMMA = 0.5772156649;

interface Rounds {
  rounds: number;
  calls: number;
  /** Each round's gap, ms (negative: it started after the expiry, a miss) and its calls. */
  each: { gap: number; calls: number }[];
}

/** Group a row's loads into refresh rounds and measure each round's gap. */
export function rounds(loads: readonly [number, number][], ttlMs: number): Rounds {
  const sorted = [...loads].sort((a, b) => a[0] - b[0]);
  const out: Rounds = { rounds: 0, calls: sorted.length, each: [] };
  // The warm-up published just before the clock started: the first round's entry expires at about ttlMs.
  let previous = 0;
  let published = -Infinity; // when the current round's first load ended
  for (const [start, end] of sorted) {
    if (start < published) {
      published = Math.min(published, end);
      out.each[out.each.length - 1]!.calls++;
      continue;
    }
    if (published !== -Infinity) previous = published;
    out.rounds++;
    out.each.push({ gap: previous + ttlMs - start, calls: 1 });
    published = end;
  }
  return out;
}

const mean = (xs: readonly number[]) => (xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length);

export const xfetchPaper: Scenario = {
  id: "xfetch",
  title: "XFetch against its paper: beta 0.5, 1, 2, alone and with lease()",
  fullOnly: true,
  async run(ctx: LabContext): Promise<ScenarioResult> {
    const ttlMs = 2000;
    const deltaMs = 100;
    // 200, not 1,000: six rows side by side on a shared machine must not starve the lab's own event loop.
    const rate = 200;
    const durationMs = ctx.quick ? 12_000 : 24_000;
    const layers = layerSettings(ttlMs, { waitMs: 1000 });
    const sets = BETAS.flatMap((beta) => [
      strategySet(`xfetch beta ${beta}`, `xfetch(beta ${beta})`, () => [xfetch({ beta })]),
      strategySet(`xfetch beta ${beta} + lease`, `xfetch(beta ${beta}), lease`, () => [
        xfetch({ beta }),
        lease({ leaseMs: layers.leaseMs, waitMs: layers.waitMs }),
      ]),
    ]);
    const result = await runSteady(ctx, {
      id: this.id,
      title: this.title,
      setup: `${rate} requests/s for ${
        durationMs / 1000
      } s on 1 key, TTL ${ttlMs} ms, origin ${deltaMs} ms, 4 pools (processes) per row, no jitter`,
      pools: 4,
      ratePerSec: rate,
      durationMs,
      ttlMs,
      keys: 1,
      origin: { baseMs: deltaMs },
      bucketMs: 200,
      timeoutMs: 1000,
      layers,
      sets,
    });
    const r = rate / 1000; // reads per ms
    const cells = result.rows.map((row: RowResult, i) => {
      const beta = BETAS[Math.floor(i / 2)]!;
      const locked = i % 2 === 1;
      const m = rounds(row.loads ?? [], ttlMs);
      const early = m.each.filter((e) => e.gap >= 0);
      const late = m.each.filter((e) => e.gap < 0);
      const gap = mean(early.map((e) => e.gap));
      const theoryGap = deltaMs * beta * (Math.log(r * deltaMs * beta) + GAMMA);
      return [
        row.set,
        row.originCalls.toLocaleString("en-US"),
        String(early.length),
        (early.length === 0 ? 0 : early.reduce((a, e) => a + e.calls, 0) / early.length).toFixed(2),
        locked ? "1" : Math.exp(1 / beta).toFixed(2),
        String(Math.round(gap)),
        String(Math.round(theoryGap)),
        `${((gap / ttlMs) * 100).toFixed(0)}%`,
        `${((theoryGap / ttlMs) * 100).toFixed(0)}%`,
        late.length === 0 ? "0" : `${late.length} (${late.reduce((a, e) => a + e.calls, 0)} calls)`,
        Math.round(row.latency.p99).toLocaleString("en-US"),
      ];
    });
    const b1 = result.rows[3];
    return {
      ...result,
      table: {
        columns: [
          "row",
          "origin calls",
          "early rounds",
          "calls/round",
          "model calls/round",
          "gap ms",
          "model gap ms",
          "waste",
          "model waste",
          "misses (calls)",
          "p99 ms",
        ],
        cells,
      },
      reading: "How to read it: a round is one refresh (the calls that start before its first call publishes); " +
        "an early round starts before the entry's expiry, by its gap (the waste: that gap as a share of the TTL, " +
        "refreshed away); a miss round starts after it (every reader misses; without lease() each one loads). " +
        "The model columns are the paper's setting (reads a Poisson stream of rate r, a load of fixed length delta): " +
        "mean gap delta x beta x (ln(r x delta x beta) + 0.577), and exp(1 / beta) calls per round for readers that " +
        "do not coordinate. Lower beta wastes less of the TTL but stampedes more (exp(2) = 7.4 calls at beta 0.5); " +
        "higher beta the reverse; beta 1, the paper's default, sits between. herdless' default (xfetch beta 1 under " +
        `lease(): ${b1 === undefined ? "" : `${(m1(b1, ttlMs)).toFixed(2)} calls per round`}) keeps beta 1's gap ` +
        "and takes the stampede side out of the trade: the lease makes every round one call, whatever beta.",
    };
  },
};

function m1(row: RowResult, ttlMs: number): number {
  const early = rounds(row.loads ?? [], ttlMs).each.filter((e) => e.gap >= 0);
  return early.length === 0 ? 0 : early.reduce((a, e) => a + e.calls, 0) / early.length;
}
