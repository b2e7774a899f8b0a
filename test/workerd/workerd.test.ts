/**
 * herdless inside a Cloudflare Worker, under the real workerd runtime with
 * `nodejs_compat`, importing the built package, against a redis-server of
 * the suite's own. The driver is Node (miniflare is a Node package): under
 * Bun and Deno these suites are skipped, since the runtime under test is
 * workerd either way.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { useRedis } from "../support/fixture.ts";
import { type Origin, startOrigin } from "./_origin.ts";
import { canDrive, publishedModules, startWorkerd, type Workerd } from "./_workerd.ts";

const Workers = suite<{ origin: Origin; workerd: Workerd }>(
  "herdless under workerd",
);
const db = useRedis(Workers, { clients: 1 });

Workers.before(async (ctx) => {
  ctx.origin = await startOrigin();
  ctx.workerd = await startWorkerd({
    bindings: { REDIS_URL: db.url, ORIGIN: ctx.origin.url },
  });
});

Workers.after(async (ctx) => {
  await ctx.workerd?.dispose();
  await ctx.origin?.close();
});

Workers(
  "every published module imports under workerd: nothing at module scope that workerd refuses",
  async ({ workerd }) => {
    const count = publishedModules().length;
    assert.ok(count > 50, `found ${count} modules in dist/`);
    assert.equal(await workerd.fetch("/modules"), {
      status: 200,
      body: { modules: count },
    });
  },
);

Workers(
  "a get loads once, later requests hit; concurrent requests of one isolate each use their own socket",
  async ({ origin, workerd }) => {
    const ns = db.ns();
    const first = await workerd.fetch(`/get?ns=${ns}&key=a`);
    assert.equal(first, {
      status: 200,
      body: { value: { key: "a", load: 1 } },
    });
    // Three rounds of 25 at once in the one isolate: none may touch another
    // request's socket, signal or promise ("Cannot perform I/O on behalf of a
    // different request" would be a 500 here).
    for (let round = 0; round < 3; round++) {
      const responses = await Promise.all(
        Array.from({ length: 25 }, () => workerd.fetch(`/get?ns=${ns}&key=a`)),
      );
      for (const response of responses) {
        assert.equal(response, {
          status: 200,
          body: { value: { key: "a", load: 1 } },
        });
      }
    }
    assert.is(origin.loads(ns), 1);
  },
);

if (canDrive) Workers.run();
else {console.log(
    "herdless under workerd: skipped (miniflare drives workerd from Node only)",
  );}
