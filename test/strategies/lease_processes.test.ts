/**
 * The stampede across OS processes: four child processes (./_worker.ts) share
 * one key through one redis-server; the origin is a Redis counter.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { runWorkers } from "../support/processes.ts";
import { client, useRedis } from "../support/fixture.ts";

const Processes = suite("lease() across processes");
const shared = useRedis(Processes, { clients: 0 });

for (const mode of ["", "near"]) {
  Processes(
    `a cold burst across 4 OS processes costs 1 origin call${mode ? ", with near() in every pipeline" : ""}`,
    async () => {
      const namespace = `procs${mode}`;
      const control = await client(shared.url, 2);
      try {
        const outputs = await runWorkers(
          control,
          new URL("./_worker.ts", import.meta.url),
          namespace,
          [0, 1, 2, 3].map((i) => [shared.url, namespace, String(i), ...(mode ? [mode] : [])]),
        );
        const results = outputs.map((o) =>
          JSON.parse(o.trim()) as { values: string[]; stats: { loads: number; nearHits: number } }
        );
        assert.is(await control.send(["GET", `${namespace}:origin`]), "1");
        for (const r of results) assert.equal(r.values, Array(mode ? 13 : 10).fill("value-1"));
        assert.is(results.reduce((sum, r) => sum + r.stats.loads, 0), 1);
        if (mode) assert.ok(results.every((r) => r.stats.nearHits >= 1), JSON.stringify(results.map((r) => r.stats)));
      } finally {
        control.destroy();
      }
    },
  );
}

Processes.run();
