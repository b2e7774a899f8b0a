/**
 * The stampede across OS processes: four child processes (./_worker.ts) share
 * one key through one redis-server; the origin is a Redis counter.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import process from "node:process";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { type RedisServer, startRedis } from "../support/redis-server.ts";
import { client } from "./_helpers.ts";

const Processes = suite("lease() across processes");
let shared: RedisServer;
Processes.before(async () => {
  shared = await startRedis();
});
Processes.after(async () => {
  await shared?.stop();
});

function workerCommand(): string[] {
  const worker = fileURLToPath(new URL("./_worker.ts", import.meta.url));
  const g = globalThis as { Bun?: unknown; Deno?: unknown };
  if (g.Bun !== undefined) return [worker];
  if (g.Deno !== undefined) return ["run", "-A", worker];
  return ["--import", "tsx", worker];
}

Processes("a cold burst across 4 OS processes costs 1 origin call", async () => {
  const namespace = "procs";
  const control = await client(shared.url, 2);
  try {
    const root = fileURLToPath(new URL("../..", import.meta.url));
    const outputs = Array.from({ length: 4 }, (_, i) => {
      const child = spawn(process.execPath, [...workerCommand(), shared.url, namespace, String(i)], {
        cwd: root,
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      let err = "";
      child.stdout!.on("data", (d) => (out += d));
      child.stderr!.on("data", (d) => (err += d));
      return new Promise<string>((resolve, reject) =>
        child.on(
          "exit",
          (code) => (code === 0 ? resolve(out) : reject(new Error(`worker ${i} exited ${code}: ${err}`))),
        )
      );
    });
    // Every worker connected: release them all at once through a Redis barrier.
    for (let i = 0; i < 4; i++) {
      const ready = await Promise.race([
        control.send(["BLPOP", `${namespace}:ready`, 30]),
        Promise.all(outputs).then(() => null),
      ]);
      assert.ok(ready !== null, "a worker exited before it was ready");
    }
    await control.send(["RPUSH", `${namespace}:go`, 1, 2, 3, 4]);
    const results = (await Promise.all(outputs)).map((o) =>
      JSON.parse(o.trim()) as { values: string[]; stats: { loads: number } }
    );
    assert.is(await control.send(["GET", `${namespace}:origin`]), "1");
    for (const r of results) assert.equal(r.values, Array(10).fill("value-1"));
    assert.is(results.reduce((sum, r) => sum + r.stats.loads, 0), 1);
  } finally {
    control.destroy();
  }
});

Processes.run();
