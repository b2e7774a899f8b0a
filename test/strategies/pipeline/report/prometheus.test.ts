import { suite } from "uvu";
import * as assert from "uvu/assert";
import { pipeline } from "../../../../strategies/pipeline/pipeline.ts";
import { prometheus } from "../../../../strategies/pipeline/report/prometheus.ts";
import { emptyStats } from "../../../../strategies/pipeline/report/stats.ts";
import { rejects } from "../../../support/assert.ts";
import { useRedis } from "../../../support/fixture.ts";

const Prometheus = suite("prometheus()");
const db = useRedis(Prometheus);

Prometheus("prometheus() formats a cache's stats() as text exposition, counters and the near gauge", async () => {
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 5000, namespace: "prom1" });
  await cache.get("a", () => "x");
  await cache.get("a", () => "x");
  const text = prometheus(cache);
  const lines = text.split("\n");
  assert.ok(text.endsWith("\n"));
  assert.ok(lines.includes("# HELP herdless_hits_total Fresh entries served"));
  assert.ok(lines.includes("# TYPE herdless_hits_total counter"));
  assert.ok(lines.includes("herdless_hits_total 1"));
  assert.ok(lines.includes("herdless_misses_total 1"));
  assert.ok(lines.includes("herdless_loads_total 1"));
  assert.ok(lines.includes("herdless_leases_won_total 0"));
  assert.ok(lines.includes("# TYPE herdless_near_entries gauge"));
  assert.ok(lines.includes("herdless_near_entries 0"));
  // One sample per stat, each after its HELP and TYPE.
  const samples = lines.filter((l) => l !== "" && !l.startsWith("#"));
  assert.is(samples.length, Object.keys(cache.stats()).length);
  for (const l of samples) assert.match(l, /^herdless_[a-z_]+ \d+$/);
  await cache.close();
});

Prometheus("several caches share one HELP/TYPE per metric and differ by an escaped cache label", () => {
  const stats = (hits: number) => ({ stats: () => ({ ...emptyStats(), hits }) });
  const text = prometheus({ users: stats(3), 'we"ird\\name\n': stats(5) }, { prefix: "app_cache" });
  assert.is(text.split("\n").filter((l) => l === "# TYPE app_cache_hits_total counter").length, 1);
  assert.ok(
    text.includes('app_cache_hits_total{cache="users"} 3\napp_cache_hits_total{cache="we\\"ird\\\\name\\n"} 5\n'),
  );
});

Prometheus("prometheus() names a bad prefix or a value that is not a cache", async () => {
  await rejects(
    () => prometheus({ stats: () => emptyStats() }, { prefix: "9lives" }),
    TypeError,
    `Cannot format metrics: 'prefix' must be a Prometheus metric name, got "9lives"`,
  );
  await rejects(
    () => prometheus({ users: {} as never }),
    TypeError,
    `Cannot format metrics: "users" must be a cache (an object with stats())`,
  );
});

Prometheus.run();
