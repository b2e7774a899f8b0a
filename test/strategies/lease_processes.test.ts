/**
 * The stampede across OS processes: four child processes (./_worker.ts) share
 * one key through one redis-server; the origin is a Redis counter.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { spawn } from "node:child_process";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { lease } from "../../strategies/lease.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import { keysFor } from "../../strategies/pipeline/read/keys.ts";
import { runWorkers, workerCommand } from "../support/processes.ts";
import { client, useRedis } from "../support/fixture.ts";
import { until } from "../support/wait.ts";

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

/**
 * Start ./_hung_owner_worker.ts: it holds `<namespace>`'s lease on "k" with
 * a loader that never settles. `exited` resolves with its stdout and exit
 * code, or with code -1 if it is still running `withinMs` after it was told
 * it is done (then it is killed: its renewal held it).
 */
function hungOwner(url: string, namespace: string, leaseMs: number, maxHoldMs: number) {
  const root = fileURLToPath(new URL("../..", import.meta.url));
  const file = fileURLToPath(new URL("./_hung_owner_worker.ts", import.meta.url));
  const child = spawn(
    process.execPath,
    [...workerCommand(file), url, namespace, String(leaseMs), String(maxHoldMs)],
    { cwd: root, stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  let err = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (err += d));
  const exit = new Promise<number>((resolve) => child.on("exit", (code) => resolve(code ?? -1)));
  return {
    exit,
    async exited(withinMs: number): Promise<{ code: number; out: string; err: string }> {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<number>((resolve) => (timer = setTimeout(() => resolve(-1), withinMs)));
      const code = await Promise.race([exit, late]);
      clearTimeout(timer);
      if (code === -1) {
        child.kill("SIGKILL");
        await exit;
      }
      return { code, out, err };
    },
  };
}

Processes(
  "a renewed lease held by a loader that never settles, in another OS process, lapses at maxHoldMs: this process takes over",
  async () => {
    const namespace = "hung-ceiling";
    const control = await client(shared.url, 2);
    const redis = await client(shared.url);
    const owner = hungOwner(shared.url, namespace, 150, 600);
    try {
      assert.ok(await Promise.race([control.send(["BLPOP", `${namespace}:won`, 30]), owner.exit.then(() => null)]));
      const cache = pipeline<string>(
        { redis, ttlMs: 30_000, namespace },
        // Far longer than the ceiling: only the lease lapsing lets this caller in.
        lease({ leaseMs: 150, waitMs: 20_000 }),
      );
      const keys = cache.keys("k");
      // The owner renews past its 150 ms first: the lease is not merely expiring.
      let last = Infinity;
      let climbs = 0;
      await until(async () => {
        const pttl = Number(await control.send(["PTTL", keys.lease]));
        if (pttl > last) climbs++;
        last = pttl;
        return climbs >= 1 || pttl < 0;
      });
      assert.is(climbs, 1, "the owner never renewed its lease");
      assert.is(await cache.get("k", () => "taken over"), "taken over");
      assert.is(cache.stats().loads, 1);
      await control.send(["RPUSH", `${namespace}:done`, "1"]);
      const { code, out, err } = await owner.exited(20_000);
      assert.is(code, 0, err);
      // The owner's load was still hanging when this process took over.
      assert.equal(JSON.parse(out.trim()), { settled: false });
      await cache.close();
    } finally {
      await owner.exited(1);
      control.destroy();
      redis.destroy();
    }
  },
);

Processes(
  "the renewal of a lease held by a loader that never settles does not keep its OS process alive",
  async () => {
    const namespace = "hung-unref";
    const control = await client(shared.url, 2);
    // A ceiling of 10 minutes: the renewal runs all through the test.
    const owner = hungOwner(shared.url, namespace, 150, 600_000);
    try {
      assert.ok(await Promise.race([control.send(["BLPOP", `${namespace}:won`, 30]), owner.exit.then(() => null)]));
      // The renewal is live: the lease's TTL climbs back past its 150 ms.
      const key = keysFor(namespace, "k").lease;
      let last = Infinity;
      await until(async () => {
        const pttl = Number(await control.send(["PTTL", key]));
        assert.ok(pttl > 0, "the lease lapsed: the owner is not renewing it");
        const climbed = pttl > last;
        last = pttl;
        return climbed;
      });
      await control.send(["RPUSH", `${namespace}:done`, "1"]);
      // With its connections dropped, only a live timer could hold it: a
      // referenced renewal would for 10 minutes.
      const { code, err } = await owner.exited(20_000);
      assert.is(code, 0, `the owner did not exit by itself (${code}): ${err}`);
    } finally {
      await owner.exited(1);
      control.destroy();
    }
  },
);

Processes.run();
