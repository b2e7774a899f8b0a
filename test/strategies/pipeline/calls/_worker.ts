/**
 * One OS process of the multi-process getMany and warm tests (not a test
 * file itself). Arguments: <redis url> <namespace> <worker id> <mode>
 * <identities, comma-separated>. Mode `getMany` calls getMany once over the
 * identities; mode `warm` warms them with concurrency 3.
 *
 * It connects, reports ready, blocks on a Redis barrier until the parent
 * releases every worker at once, then runs. The origin counts each identity's
 * loads in a Redis hash and the loads in flight (with their peak per worker)
 * in Redis, so counts are exact across processes; a load waits until every
 * worker has started, so the processes really overlap. Prints one JSON line.
 */
import process from "node:process";
import { connect } from "../../../../resp/client.ts";
import { coalesce } from "../../../../strategies/coalesce.ts";
import { lease } from "../../../../strategies/lease.ts";
import { pipeline } from "../../../../strategies/pipeline/pipeline.ts";

const [url, namespace, id, mode, list] = process.argv.slice(-5) as [string, string, string, string, string];
const identities = list.split(",");
const redis = await connect({ url, resp: 3 });
const control = await connect({ url });
const cache = pipeline({ redis, ttlMs: 60_000, namespace }, coalesce(), lease({ leaseMs: 20_000, waitMs: 30_000 }));

let inflight = 0;
let peak = 0;
async function origin(identity: string): Promise<string> {
  inflight++;
  peak = Math.max(peak, inflight);
  try {
    await control.send(["HINCRBY", `${namespace}:origin`, identity, 1]);
    // Every worker is past its barrier before any load ends.
    const deadline = Date.now() + 15_000;
    while (Number(await control.send(["LLEN", `${namespace}:started`])) < 4) {
      if (Date.now() > deadline) throw new Error("the other workers never started");
      await new Promise((r) => setTimeout(r, 5));
    }
    return `value of ${identity}`;
  } finally {
    inflight--;
  }
}

let batches = 0;
await control.send(["RPUSH", `${namespace}:ready`, id]);
await control.send(["BLPOP", `${namespace}:go`, 30]);
await control.send(["RPUSH", `${namespace}:started`, id]);
let result: unknown;
if (mode === "getMany") {
  result = await cache.getMany(identities, async (missing) => {
    batches++;
    return await Promise.all(missing.map((m) => origin(String(m))));
  });
} else {
  result = await cache.warm(identities, ({ identity }) => origin(String(identity)), { concurrency: 3 });
}
process.stdout.write(`${JSON.stringify({ id, result, batches, peak, stats: cache.stats() })}\n`);
await cache.close();
await redis.close();
await control.close();
process.exit(0);
