/**
 * The other OS process of the skip() test (run by
 * loader_choices.test.ts, not a test file itself). Arguments:
 * <redis url> <namespace>.
 *
 * It connects, reports ready, waits for the parent's barrier, then gets
 * "k" under a lease whose waiter never polls before its waitMs: only an
 * announcement can wake it. It reports on `<namespace>:parked` once it
 * waits on the parent's lease, and prints one JSON line: its value and stats.
 */
import process from "node:process";
import { connect } from "../../../../resp/client.ts";
import { lease } from "../../../../strategies/lease.ts";
import { pipeline } from "../../../../strategies/pipeline/pipeline.ts";

const [url, namespace] = process.argv.slice(-2) as [string, string];
const redis = await connect({ url, resp: 3 });
const control = await connect({ url });
const cache = pipeline<string>(
  {
    redis,
    ttlMs: 30_000,
    namespace,
    onEvent(event) {
      if (event.type === "wait") void control.send(["RPUSH", `${namespace}:parked`, "b"]);
    },
  },
  // waitMs is what a waiter sits out when nobody announces the lease's end.
  lease({ leaseMs: 30_000, waitMs: 20_000, pollMs: 30_000 }),
);

await control.send(["RPUSH", `${namespace}:ready`, "b"]);
await control.send(["BLPOP", `${namespace}:go`, 30]);
// Shorter than any poll pause (15-30 s): only an announcement can wake this caller in time.
const value = await cache.get("k", () => "from-b", { timeoutMs: 10_000 });
process.stdout.write(`${JSON.stringify({ value, stats: cache.stats() })}\n`);
await cache.close();
await redis.close();
await control.close();
process.exit(0);
