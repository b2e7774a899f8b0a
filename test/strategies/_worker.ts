/**
 * One OS process of the multi-process stampede test (run by lease.test.ts,
 * not a test file itself). Arguments: <redis url> <namespace> <worker id>.
 *
 * It connects, reports ready, blocks on a Redis barrier until the parent
 * releases every worker at once, then fires 10 concurrent gets for one key.
 * The origin is a Redis counter (INCR), so calls are counted across
 * processes; the owner's origin waits until every worker has a caller in the
 * race (holding the lease or waiting on it), so the race is forced, not hoped for.
 * A fourth argument `near` puts `near()` in front (every process then keeps
 * the value in memory too). Prints one JSON line: the values it got and its stats.
 */
import process from "node:process";
import { connect } from "../../resp/client.ts";
import { coalesce } from "../../strategies/coalesce.ts";
import { near } from "../../strategies/near.ts";
import { lease } from "../../strategies/lease.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import { stampedeWorker } from "../support/processes.ts";

const withNear = process.argv.at(-1) === "near";
const [url, namespace, id] = process.argv.slice(withNear ? -4 : -3) as [string, string, string];
const redis = await connect({ url, resp: 3 });
const control = await connect({ url });
const { onEvent, load } = stampedeWorker(control, namespace, id, 4);
const cache = pipeline(
  { redis, ttlMs: 30_000, namespace, onEvent },
  ...(withNear ? [near()] : []),
  coalesce(),
  lease({ leaseMs: 10_000, waitMs: 20_000 }),
);

await control.send(["RPUSH", `${namespace}:ready`, id]);
await control.send(["BLPOP", `${namespace}:go`, 30]);
const values = await Promise.all(Array.from({ length: 10 }, () => cache.get("hot", load)));
// With near(), a read after the burst is kept in memory and the next one served from there.
if (withNear) { for (let i = 0; i < 3; i++) values.push(await cache.get("hot", load)); }
process.stdout.write(`${JSON.stringify({ id, values, stats: cache.stats() })}\n`);
await cache.close();
await redis.close();
await control.close();
process.exit(0);
