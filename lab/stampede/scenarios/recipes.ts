/**
 * Scenario "recipes": herdless against what users write instead, the three
 * seed articles' recipes (lab/stampede/recipes/), through the lab's own stories: a
 * cold burst across 4 processes, a hot key, many keys expiring together, a
 * slow origin below and above recipe 001's 2.5 s poll budget, a failing
 * origin, FLUSHALL, a reader whose wall clock runs 30 s ahead, and an owner
 * paused past its lock. Each story is one table (herdless' full pipeline,
 * then recipe 001, 000, 002) with the same loads, origins and counters as
 * the other scenarios, plus Redis commands per request and values older
 * than one already served. The quick lab leaves out the cold burst and the
 * origin above the poll budget (the two that take longest), unless `--only`
 * names the scenario.
 *
 * @module
 */
import { describeRow, type LayerSettings, layerSettings, ROWS } from "../rows/layers.ts";
import { recipeRows, type RecipeSettings } from "../rows/sets.ts";
import { runSteady, type SteadySpec } from "../load/steady.ts";
import type { LabContext, Scenario, ScenarioResult } from "../types.ts";
import { runBurst } from "./cold_burst.ts";
import { failingOriginLoad, outageOf } from "./failing_origin.ts";
import { flushLoad } from "./flush.ts";
import { hotKeyLoad } from "./hot_key.ts";
import { manyKeysLoad } from "./many_keys.ts";
import { redisDownStories } from "./redis_down.ts";

const POOLS = 4;
const SKEWED_SHARE = 500;

type Story = Omit<SteadySpec, "id" | "pools" | "sets" | "layers" | "title"> & {
  id: string;
  title: string;
  /** Left out of the quick lab. */
  fullOnly?: boolean;
  layers: LayerSettings;
  recipe?: Partial<RecipeSettings>;
};

function steady(ctx: LabContext, story: Story): Promise<ScenarioResult> {
  const recipe: RecipeSettings = { staleMs: story.layers.staleMs, ...story.recipe };
  return runSteady(ctx, {
    ...story,
    id: `recipes-${story.id}`,
    pools: POOLS,
    sets: recipeRows(story.layers, recipe),
    // The recipes set no caller deadline of their own (001 polls 2.5 s, then loads): let every request finish.
    drainMs: story.drainMs ?? 6000,
  }).then((r) => ({ ...r, id: story.id }));
}

/** The stories, in the order of the tables: the lab's own loads (scenarios 2 to 6) and three of their own. */
function stories(ctx: LabContext): Story[] {
  const quick = ctx.quick;
  const ttlMs = quick ? 700 : 2000;
  const durationMs = quick ? 1600 : 5000;
  // 500 per row, not the other scenarios' 1,000: the recipes' polling costs the lab process CPU too, and a
  // starved lab measures the machine (2 shared cores), not the caches.
  const rate = 500;
  const hot = (title: string) => `${rate} requests/s for ${durationMs / 1000} s on 1 key, TTL ${ttlMs} ms, ${title}`;
  // 400 requests/s for 0.5 s: every caller of the above-budget story arrives while the first load runs, with a
  // margin for 50 polls taking longer than 2.5 s on a busy machine (each is a timer and a round trip).
  const slow = (originMs: number): Story => {
    const above = originMs > 2500;
    const leaseMs = originMs + 3000;
    return {
      id: above ? "slow-origin-above" : "slow-origin-below",
      title: `cold key, origin ${originMs / 1000} s (${above ? "above" : "below"} 001's 2.5 s poll budget)`,
      setup: `400 requests/s for 0.5 s on 1 missing key, origin ${originMs} ms, herdless lease ${
        leaseMs / 1000
      } s, wait and caller timeout ${(leaseMs - 1000) / 1000} s`,
      ratePerSec: 400,
      durationMs: 500,
      ttlMs: 60_000,
      keys: 1,
      warm: false,
      origin: { baseMs: originMs },
      bucketMs: 250,
      timeoutMs: leaseMs - 1000,
      drainMs: originMs + 6000,
      layers: layerSettings(60_000, { leaseMs, waitMs: leaseMs - 1000 }),
    };
  };
  const down = outageOf(quick);
  const pause = { atMs: quick ? 500 : 1500, ms: 1000 };
  const lockMs = 300;
  return [
    {
      id: "hot-key",
      title: "hot key expiring under steady load",
      setup: hot(`${POOLS} pools (processes) per row`),
      ...hotKeyLoad(rate, durationMs, ttlMs),
    },
    {
      id: "many-keys",
      title: "many keys expiring together",
      setup: `100 keys written together, TTL ${ttlMs} ms, ${rate} requests/s over them for ${durationMs / 1000} s`,
      ...manyKeysLoad(rate, durationMs, ttlMs),
    },
    slow(1000),
    // 5 s, not just above 2.5 s: 50 polls of 50 ms plus a round trip each take longer than 2.5 s on a busy machine.
    // Full only: it waits out that origin, about 8 s.
    { ...slow(5000), fullOnly: true },
    {
      id: "failing-origin",
      title: "origin failing during refresh",
      setup: hot(`origin down from ${down.from} to ${down.to} ms, herdless swr error window 10 s`),
      ...failingOriginLoad(rate, durationMs, ttlMs, down),
    },
    {
      ...flushLoad(ctx, rate),
      id: "flush",
      title: "FLUSHALL mid-run (cold start)",
      drainMs: 5000,
    },
    {
      id: "clock-skew",
      title: "a reader whose clock runs 30 s ahead",
      setup: hot(
        `1 of ${POOLS} pools (processes) per row has its wall clock 30 s ahead and takes 1 request in ${SKEWED_SHARE} (a low-traffic process: a cron, an admin app)`,
      ),
      ...hotKeyLoad(rate, durationMs, ttlMs),
      // A skewed process that reads the key often just becomes its only refresher; one that reads it
      // less often than the stale grace leaves the others a value they believe fresh until Redis drops it.
      poolOf: (i) => (i % SKEWED_SHARE === 0 ? 0 : 1 + (i % (POOLS - 1))),
      recipe: { skewMs: (pool) => (pool === 0 ? 30_000 : 0) },
    },
    {
      id: "paused-owner",
      title: "an owner paused past its lock",
      setup: `${rate} requests/s for ${
        (durationMs + 800) / 1000
      } s on 1 key, TTL ${ttlMs} ms; every lock and lease ${lockMs} ms; the first origin call after ${pause.atMs} ms pauses ${pause.ms} ms holding its value (a GC or VM pause)`,
      ...hotKeyLoad(rate, durationMs + 800, ttlMs),
      drainMs: 4000,
      layers: layerSettings(ttlMs, { waitMs: 1000, leaseMs: lockMs }),
      marks: [{ atMs: pause.atMs, toMs: pause.atMs + pause.ms, label: "owner paused" }],
      pause,
      recipe: { lockMs },
    },
  ];
}

export const recipes: Scenario = {
  id: "recipes",
  title: "herdless against the articles' recipes",
  quickLeavesOut:
    "the recipes' cold burst across 4 processes, their origin above 001's poll budget and the Redis-down stories",
  async run(ctx: LabContext): Promise<ScenarioResult> {
    const parts: ScenarioResult[] = [];
    const layers = layerSettings(10_000, { waitMs: 3000 });
    // Full only: four processes start for it (about 5 s); the quick lab's own cold burst shows herdless' side.
    if (!ctx.cut) {
      parts.push(
        await runBurst(ctx, "cold-burst", "cold burst across 4 processes", layers, [
          { label: "herdless (full)", strategies: describeRow(ROWS - 1), row: ROWS - 1 },
          { label: "recipe 001", strategies: "lock + poll", row: 0, recipe: "001" },
          { label: "recipe 000", strategies: "lease + checked publish", row: 0, recipe: "000" },
          { label: "recipe 002", strategies: "single flight + lock", row: 0, recipe: "002" },
        ], { staleMs: layers.staleMs }),
      );
    }
    for (const story of stories(ctx).filter((s) => !(ctx.cut && s.fullOnly))) {
      ctx.progress(`${this.title}: ${story.title}`);
      parts.push(await steady(ctx, story));
    }
    // Full only: a server and four app processes of their own, two stories of 10 and 15 s (about 45 s in all).
    if (!ctx.cut) parts.push(...(await redisDownStories(ctx)));
    return {
      id: this.id,
      title: this.title,
      setup: `${parts.length} stories; rows: herdless' full pipeline (in the Redis-down stories, in each onRedisDown ` +
        "mode), then recipes 001, 000 and 002 (lab/stampede/recipes/)",
      origin: "simulated origins, one per row",
      bucketMs: parts[0]!.bucketMs,
      durationMs: parts[0]!.durationMs,
      marks: [],
      rows: [],
      parts,
      problems: parts.flatMap((p) => p.problems),
    };
  },
};
