/**
 * The hung owner of the lease ceiling tests (run by lease_processes.test.ts,
 * not a test file itself). Arguments: <redis url> <namespace> <leaseMs>
 * <maxHoldMs>.
 *
 * It gets "k" under a renewed lease with a loader that ignores its signal
 * and never settles, pushes "won" to `<namespace>:won` once it holds the
 * lease, and waits for the parent's word on `<namespace>:done`. Then it drops
 * its connections and lets its main module end without process.exit(): it
 * exits only if nothing it left running (the hung load, the lease's renewal)
 * holds the process. It never closes the cache: that would wait for the load.
 */
import process from "node:process";
import { connect } from "../../resp/client.ts";
import { lease } from "../../strategies/lease.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";

const [url, namespace, leaseMs, maxHoldMs] = process.argv.slice(-4) as [string, string, string, string];
const redis = await connect({ url, resp: 3 });
const control = await connect({ url });
// Its own connection: a BLPOP holds the commands queued behind it.
const waiter = await connect({ url });
const cache = pipeline<string>(
  {
    redis,
    ttlMs: 30_000,
    namespace,
    onEvent(event) {
      if (event.type === "lease-won") void control.send(["RPUSH", `${namespace}:won`, "owner"]);
    },
  },
  lease({ leaseMs: Number(leaseMs), renew: true, maxHoldMs: Number(maxHoldMs) }),
);

let settled = false;
cache.get("k", () => new Promise<string>(() => {})).then(() => (settled = true), () => (settled = true));
await waiter.send(["BLPOP", `${namespace}:done`, 60]);
process.stdout.write(`${JSON.stringify({ settled })}\n`);
redis.destroy();
control.destroy();
waiter.destroy();
