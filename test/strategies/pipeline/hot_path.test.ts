import { suite } from "uvu";
import * as assert from "uvu/assert";
import { coalesce } from "../../../strategies/coalesce.ts";
import { lease } from "../../../strategies/lease.ts";
import { near } from "../../../strategies/near.ts";
import { pipeline } from "../../../strategies/pipeline/pipeline.ts";
import { TimeoutError } from "../../../resp/errors.ts";
import { rejects } from "../../support/assert.ts";
import { useRedis } from "../../support/fixture.ts";
import { deferred } from "../../support/wait.ts";

const Hot = suite("the hit path as users write it");
const db = useRedis(Hot, { prefix: "hot", clients: 1 });

/**
 * Count the AbortControllers built while `run` runs: a call's timer is set
 * only right after its controller is built, so none built means none set.
 */
async function controllersBuilt(run: () => Promise<void>): Promise<number> {
  const Original = globalThis.AbortController;
  let built = 0;
  globalThis.AbortController = class extends Original {
    constructor() {
      super();
      built++;
    }
  };
  try {
    await run();
  } finally {
    globalThis.AbortController = Original;
  }
  return built;
}

Hot("a near hit with per-call { timeoutMs } builds no AbortController and sets no timer", async () => {
  const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, near(), coalesce(), lease());
  const options = { timeoutMs: 2_000 };
  await cache.get(["product", 1], () => ({ id: 1 }), options); // loaded
  await cache.get(["product", 1], () => ({ id: 1 }), options); // read, kept near
  const hitsBefore = cache.stats().nearHits;
  const built = await controllersBuilt(async () => {
    for (let i = 0; i < 50; i++) {
      assert.equal(await cache.get(["product", 1], () => ({ id: -1 }), { timeoutMs: 2_000, ttlMs: 60_000 }), { id: 1 });
    }
  });
  assert.is(cache.stats().nearHits - hitsBefore, 50, "near hits");
  assert.is(built, 0, "AbortControllers built by near hits");
  await cache.close();
});

Hot(
  "a remote hit with per-call { timeoutMs } builds none either; a miss does, and its deadline still holds",
  async () => {
    const cache = pipeline({ redis: db.redis, ttlMs: 60_000, namespace: db.ns() }, coalesce(), lease());
    await cache.get(["product", 2], () => ({ id: 2 }), { timeoutMs: 2_000 });
    const built = await controllersBuilt(async () => {
      for (let i = 0; i < 20; i++) {
        assert.equal(await cache.get(["product", 2], () => ({ id: -1 }), { timeoutMs: 2_000 }), { id: 2 });
      }
    });
    assert.is(built, 0, "AbortControllers built by remote hits");
    // A miss waits for its load: the signal the loader gets is the call's, and the timeout aborts it.
    const aborted = deferred<unknown>();
    const missBuilt = await controllersBuilt(async () => {
      await rejects(
        () =>
          cache.get(["product", 3], ({ signal }) =>
            new Promise((_, reject) => {
              signal.addEventListener("abort", () => {
                aborted.resolve(signal.reason);
                reject(signal.reason);
              });
            }), { timeoutMs: 1_000 }),
        TimeoutError,
        `Cannot get ${cache.keys(["product", 3]).data}: no answer within timeoutMs (1000 ms)`,
      );
    });
    assert.ok(missBuilt >= 1, "a miss builds its signal");
    assert.instance(await aborted.promise, TimeoutError);
    await cache.close();
  },
);

Hot.run();
