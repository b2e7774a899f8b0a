/**
 * One OS process of the cold-burst scenario (started by
 * scenarios/cold_burst.ts, never run by hand). Arguments: <redis url>
 * <worker id> <pools>.
 *
 * It opens its pools once, then serves one command at a time from its Redis
 * list: build the row's caches, report ready, block on the barrier (BLPOP)
 * until the parent releases every process with one RPUSH, fire its requests
 * for one key, and push back latencies, counters and when each origin call
 * started. The origin counts its calls in Redis (INCR), so the count across
 * processes is exact and needs nobody's word for it.
 *
 * Every wait is a BLPOP with a timeout: if the parent dies, the worker exits.
 *
 * @module
 */
import process from "node:process";
import { setTimeout as sleep } from "node:timers/promises";
import { connect, Script } from "../../../resp/mod.ts";
import { pipeline } from "../../../mod.ts";
import { addStats } from "../rows/checks.ts";
import { type BurstCommand, burstKeys, type BurstReport } from "./burst_protocol.ts";
import { counted } from "../rows/counting.ts";
import { strategiesFor } from "../rows/layers.ts";
import { makeRecipe } from "../rows/sets.ts";
import { commands, released, runWorker } from "./worker_side.ts";

// The origin's counters live in Redis: calls, in-flight, and the peak of in-flight.
const ENTER = new Script(`
local n = redis.call('INCR', KEYS[2])
redis.call('INCR', KEYS[1])
if n > tonumber(redis.call('GET', KEYS[3]) or '0') then redis.call('SET', KEYS[3], n) end
return n
`);

async function main(): Promise<void> {
  const [url, id, poolsArg] = process.argv.slice(-3) as [string, string, string];
  const control = await connect({ url });
  const origin = await connect({ url });
  const pools = await Promise.all(Array.from({ length: Number(poolsArg) }, () => connect({ url, resp: 3 })));
  await control.send(["RPUSH", "lab-burst:hello", id]);
  for await (const cmd of commands<BurstCommand>(control, `lab-burst:cmd:${id}`, `worker ${id}`)) {
    const k = burstKeys(cmd.namespace);
    const wrapped = pools.map((redis) => counted(redis));
    const caches = wrapped.map(({ redis }, pool) => {
      if (cmd.recipe !== undefined) {
        // One recipe instance per pool, as one per app process; pool numbers are unique across workers.
        const recipe = makeRecipe(cmd.recipe, redis, cmd.ttlMs, cmd.recipeSettings!, Number(id) * pools.length + pool);
        return {
          get: (key: string, loader: () => Promise<string>) => recipe.get(`${cmd.namespace}:${key}`, loader),
          stats: () => recipe.stats(),
          close: () => Promise.resolve(),
        };
      }
      const cache = pipeline<string>(
        { redis, ttlMs: cmd.ttlMs, namespace: cmd.namespace },
        ...strategiesFor(cmd.row, cmd.layers),
      );
      return {
        get: (key: string, loader: () => Promise<string>) => cache.get(key, loader, { timeoutMs: cmd.timeoutMs }),
        stats: () => cache.stats(),
        close: () => cache.close(),
      };
    });
    const sentBefore = wrapped.reduce((a, c) => a + c.sent(), 0);
    const offsets: number[] = [];
    let releasedAt = 0;
    const loader = async (): Promise<string> => {
      offsets.push(performance.now() - releasedAt);
      const n = await ENTER.run(origin, [k.calls, k.inflight, k.peak], []);
      try {
        await sleep(cmd.originMs);
      } finally {
        await origin.send(["DECR", k.inflight]);
      }
      return `value-${id}-${String(n)}`;
    };
    await released(control, k, id);
    releasedAt = performance.now();
    const report: BurstReport = {
      id,
      latencies: [],
      ok: 0,
      errors: 0,
      timeouts: 0,
      errorSamples: [],
      offsets,
      stats: caches[0]!.stats(),
      commands: 0,
    };
    const samples = new Map<string, string>();
    await Promise.all(
      caches.flatMap((cache) =>
        Array.from({ length: cmd.requestsPerPool }, async () => {
          const started = performance.now();
          try {
            await cache.get("hot", loader);
            report.ok++;
          } catch (error) {
            const e = error as Error;
            if (e?.name === "TimeoutError") report.timeouts++;
            else report.errors++;
            samples.set(e?.name ?? "?", `${e?.name}: ${e?.message}`);
          } finally {
            report.latencies.push(performance.now() - started);
          }
        })
      ),
    );
    await Promise.all(caches.map((c) => c.close()));
    report.stats = caches.map((c) => c.stats()).reduce(addStats);
    report.errorSamples = [...samples.values()];
    report.commands = wrapped.reduce((a, c) => a + c.sent(), 0) - sentBefore;
    await control.send(["RPUSH", k.result, JSON.stringify(report)]);
  }
  await Promise.all([control, origin, ...pools].map((c) => c.close()));
}

runWorker(main);
