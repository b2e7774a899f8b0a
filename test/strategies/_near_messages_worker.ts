/**
 * One OS process of the near-without-tracking test (run by
 * near_messages.test.ts, not a test file itself). Arguments: <data url>
 * <control url> <namespace> <resp>.
 *
 * It connects to the data url (a user refused CLIENT TRACKING, a server with
 * CLIENT renamed away, or RESP2), keeps "k" (which the parent already set:
 * this process writes nothing) in its near tier, says so on
 * `<namespace>:near`, then waits for the near-invalidation the other
 * process' set() causes and reads "k" once more. Prints one JSON line: the
 * mode it ran in, the value read after the invalidation, where it came from,
 * and its stats.
 */
import process from "node:process";
import { connect } from "../../resp/client.ts";
import { near } from "../../strategies/near.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import type { CacheEvent } from "../../strategies/events.ts";
import { within } from "../support/wait.ts";

const [url, controlUrl, namespace, resp] = process.argv.slice(-4) as [string, string, string, string];
const redis = await connect({ url, resp: Number(resp) as 2 | 3 });
const control = await connect({ url: controlUrl });
let armed = false;
let invalidated!: () => void;
const dropped = new Promise<void>((resolve) => (invalidated = resolve));
const modes: string[] = [];
const cache = pipeline(
  {
    redis,
    ttlMs: 60_000,
    namespace,
    onEvent(event: CacheEvent) {
      if (armed && event.type === "near-invalidation") invalidated();
      if (event.type === "invalidation-mode") modes.push(event.mode);
    },
  },
  near(),
);

await control.send(["RPUSH", `${namespace}:ready`, "0"]);
await control.send(["BLPOP", `${namespace}:go`, 30]);
// Kept near once its own read is covered: the first get may come before the
// listening connection subscribed; later ones are served from memory.
for (let i = 0; cache.stats().nearHits === 0; i++) {
  if (i > 1000) throw new Error("never served from the near tier");
  await cache.get("k", () => "not set");
}
const nearHitsBefore = cache.stats().nearHits;
armed = true;
await control.send(["RPUSH", `${namespace}:near`, cache.invalidationMode()]);
// A deadline, not a sleep: it ends when the invalidation arrives, and a broken feed fails the test by name.
await within(dropped, "the near-invalidation the other process' set() causes");
const value = await cache.get("k", () => "origin");
const stats = cache.stats();
process.stdout.write(
  `${JSON.stringify({ mode: cache.invalidationMode(), modes, value, nearHitsBefore, nearHits: stats.nearHits })}\n`,
);
await cache.close();
await redis.close();
await control.close();
process.exit(0);
