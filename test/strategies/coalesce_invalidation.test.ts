/**
 * Found by the model-based test (pipeline/model.test.ts):
 * after `invalidateTags()` or `clear()` resolved, a get of the same process
 * joined (coalesce()) a load that began before it and returned that load's
 * value, which its own invalidation had already made a miss.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { coalesce } from "../../strategies/coalesce.ts";
import { lease } from "../../strategies/lease.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import { useRedis } from "../support/fixture.ts";
import { origin } from "../support/strategies.ts";
import { deferred } from "../support/wait.ts";

const test = suite("coalesce() after an invalidation");
const db = useRedis(test);

for (const how of ["invalidateTags", "clear"] as const) {
  test(`a get that starts after ${how}() resolved never joins a load that began before it`, async () => {
    const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, coalesce(), lease());
    try {
      const o = origin((call) => `v${call}`);
      const hold = deferred();
      o.hold = hold.promise;
      const tags = { tags: ["t"] };
      const first = cache.get("k", o.load, tags);
      await o.called(1);
      if (how === "invalidateTags") await cache.invalidateTags(["t"]);
      else await cache.clear();
      o.hold = undefined;
      const second = cache.get("k", o.load, tags);
      hold.resolve();
      assert.is(await first, "v1", "its caller began before the invalidation");
      assert.is(await second, "v2");
      assert.is(o.calls, 2);
      assert.is(await cache.get("k", o.load, tags), "v2");
    } finally {
      await cache.close();
    }
  });
}

test.run();
