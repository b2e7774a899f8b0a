/** fromIoredis() against ioredis 5 and 6 (RESP2, and RESP3 both ways) and a real redis-server. */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Redis } from "ioredis5";
import { fromIoredis } from "../../resp/adapters/ioredis.ts";
import { coalesce } from "../../strategies/coalesce.ts";
import { lease } from "../../strategies/lease.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import { useRedis } from "../support/fixture.ts";
import { rejects } from "../support/assert.ts";
import { events, origin } from "../support/strategies.ts";
import { deferred } from "../support/wait.ts";
import { contract } from "./_contract.ts";
import { IOREDIS } from "./_flavors.ts";

contract("fromIoredis()", IOREDIS);

const Options = suite("fromIoredis() and the client's options");
const db = useRedis(Options, { connect: {} });

Options("refuses what is not an ioredis client, naming what it needs", async () => {
  const message =
    "Cannot create the ioredis adapter: 'client' must be an ioredis Redis or Cluster (with call() and callBuffer())";
  await rejects(() => fromIoredis(null as never), TypeError, message);
  await rejects(() => fromIoredis({ call() {} } as never), TypeError, message);
  await rejects(() => fromIoredis({ sendCommand() {} } as never), TypeError, message);
});

Options("a keyPrefix applies to every key of the cache, scripts' keys included; waiters poll", async () => {
  const control = db.redis;
  const a = new Redis(db.url, { keyPrefix: "app:", lazyConnect: true });
  const b = new Redis(db.url, { keyPrefix: "app:", lazyConnect: true });
  try {
    await Promise.all([a.connect(), b.connect()]);
    const ev = events();
    const one = pipeline(
      { redis: fromIoredis(a), ttlMs: 5000, namespace: "pre", onEvent: ev.onEvent },
      coalesce(),
      lease(),
    );
    const two = pipeline(
      { redis: fromIoredis(b), ttlMs: 5000, namespace: "pre", onEvent: ev.onEvent },
      coalesce(),
      lease(),
    );
    const hold = deferred();
    const o = origin(() => "v");
    o.hold = hold.promise;
    const calls = Array.from({ length: 20 }, (_, i) => (i % 2 ? one : two).get("k", o.load));
    await ev.reach(["coalesced", "wait"], 19);
    hold.resolve();
    assert.ok((await Promise.all(calls)).every((v) => v === "v"));
    assert.is(o.calls, 1);
    const data = one.keys("k").data;
    assert.is(await control.send(["EXISTS", data]), 0, "nothing stored without the prefix");
    assert.is(await control.send(["EXISTS", `app:${data}`]), 1, "stored under the prefix");
    await one.invalidate("k");
    assert.is(await control.send(["EXISTS", `app:${data}`]), 0, "invalidate() found the prefixed key");
    await Promise.all([one.close(), two.close()]);
  } finally {
    a.disconnect();
    b.disconnect();
  }
});

Options.run();
