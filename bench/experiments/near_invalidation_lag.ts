/**
 * How long after a `set()` resolves another connection's near tier drops the
 * old value, by client tracking and by invalidation messages (the mode for a
 * user refused `CLIENT TRACKING`, a server with `CLIENT` renamed away, or
 * RESP2). One process, two connections (a writer cache without a tier, a
 * reader cache with `near()`), against a redis-server started here; the write
 * i + 1 waits until the reader holds version i near again, so writes never
 * overlap. lag = the reader's `near-invalidation` event - the writer's set()
 * resolved (0 when the event came first), and "from send" = the event - the
 * set() call, all `performance.now()` of the same process.
 *
 *   node --import tsx bench/experiments/near_invalidation_lag.ts [writes]
 *
 * @module
 */
import process from "node:process";
import { connect, near, pipeline } from "../../mod.ts";
import { startRedis } from "../../test/support/redis_server.ts";

const writes = Number(process.argv[2] ?? 2000);
const server = await startRedis({ args: ["--rename-command", "CLIENT", ""] });
const plain = await startRedis();

async function measure(label: string, url: string, resp: 2 | 3): Promise<void> {
  const reader = await connect({ url, resp });
  const writer = await connect({ url, resp: 3 });
  let dropped: ((at: number) => void) | undefined;
  const cache = pipeline<number>({
    redis: reader,
    ttlMs: 60_000,
    namespace: "lag",
    onEvent: (e) => e.type === "near-invalidation" && dropped?.(performance.now()),
  }, near());
  const source = pipeline<number>({
    redis: writer,
    ttlMs: 60_000,
    namespace: "lag",
  });
  const lags: number[] = [];
  const fromSend: number[] = [];
  await source.set("hot", -1);
  for (let i = 0; i < writes; i++) {
    // Held near again before the next write.
    const hits = cache.stats().nearHits;
    while (cache.stats().nearHits === hits) await cache.get("hot", () => -2);
    const seen = new Promise<number>((resolve) => (dropped = resolve));
    const sent = performance.now();
    await source.set("hot", i);
    const resolved = performance.now();
    const at = await seen;
    lags.push(Math.max(0, at - resolved) * 1000);
    fromSend.push((at - sent) * 1000);
  }
  const q = (xs: number[], p: number) => {
    const sorted = [...xs].sort((a, b) => a - b);
    return `${
      sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!
        .toFixed(0)
    } µs`;
  };
  const row = (xs: number[]) => `p50 ${q(xs, 0.5)}, p99 ${q(xs, 0.99)}, max ${q(xs, 1)}`;
  console.log(
    `${label} (${cache.invalidationMode()}), ${writes} writes: after set() ${row(lags)}; from send ${row(fromSend)}`,
  );
  await Promise.all([cache.close(), source.close()]);
  await Promise.all([reader.close(), writer.close()]);
}

await measure("RESP3, tracking", plain.url, 3);
await measure("RESP3, CLIENT renamed away", server.url, 3);
await measure("RESP2", plain.url, 2);
await Promise.all([server.stop(), plain.stop()]);
