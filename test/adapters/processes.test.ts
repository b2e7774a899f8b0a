/**
 * One lease across OS processes that reach Redis through different clients:
 * an ioredis process, a node-redis process (adapters, their waiters poll)
 * and a process on our own RESP3 client (and, under Bun, one on Bun's
 * client). Each is a ./_worker.ts child; the origin is a Redis counter.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import process from "node:process";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { useRedis } from "../support/fixture.ts";
import { until } from "../support/wait.ts";

const isBun = (globalThis as { Bun?: unknown }).Bun !== undefined;
const KINDS = ["ioredis", "herdless", "node-redis", ...(isBun ? ["bun"] : [])];

const Processes = suite("adapters across processes");
const db = useRedis(Processes, { connect: {} });

function workerCommand(): string[] {
  const worker = fileURLToPath(new URL("./_worker.ts", import.meta.url));
  if (isBun) return [worker];
  if ((globalThis as { Deno?: unknown }).Deno !== undefined) return ["run", "-A", worker];
  return ["--import", "tsx", worker];
}

interface Result {
  id: string;
  kind: string;
  values: string[];
  stats: { loads: number; waits: number; leasesWon: number };
}

/**
 * Start one worker per kind, release `holder` alone until its lease is won,
 * then the others, and return what every worker got and what they reported.
 */
async function race(namespace: string, holder: string): Promise<{ results: Result[]; parked: string[] }> {
  const root = fileURLToPath(new URL("../..", import.meta.url));
  const outputs = KINDS.map((kind) => {
    const child = spawn(
      process.execPath,
      [...workerCommand(), db.server.url, namespace, kind, kind, String(KINDS.length)],
      { cwd: root, stdio: ["ignore", "pipe", "pipe"] },
    );
    let out = "";
    let err = "";
    child.stdout!.on("data", (d) => (out += d));
    child.stderr!.on("data", (d) => (err += d));
    return new Promise<Result>((resolve, reject) =>
      child.on("exit", (code) => {
        if (code !== 0) reject(new Error(`${kind} worker exited ${code}: ${err}`));
        else resolve(JSON.parse(out.trim()) as Result);
      })
    );
  });
  const exited = Promise.all(outputs).then(() => null);
  for (let i = 0; i < KINDS.length; i++) {
    const ready = await Promise.race([db.redis.send(["BLPOP", `${namespace}:ready`, 30]), exited]);
    assert.ok(ready !== null, "a worker exited before it was ready");
  }
  // The holder alone first: its lease is taken before anyone else looks.
  await db.redis.send(["RPUSH", `${namespace}:go:${holder}`, 1]);
  await until(async () => Number(await db.redis.send(["LLEN", `${namespace}:parked`])) >= 1, 20_000);
  for (const kind of KINDS) if (kind !== holder) await db.redis.send(["RPUSH", `${namespace}:go:${kind}`, 1]);
  const results = await Promise.all(outputs);
  const parked = (await db.redis.send(["LRANGE", `${namespace}:parked`, 0, -1])) as string[];
  return { results, parked };
}

for (const holder of ["ioredis", "herdless"]) {
  const others = KINDS.filter((k) => k !== holder).join(", ");
  Processes(`a lease held by the ${holder} process makes the ${others} processes wait: 1 origin call`, async () => {
    const namespace = `procs-${holder}`;
    const { results, parked } = await race(namespace, holder);
    assert.is(parked[0], `${holder}:lease-won`, "the holder won the lease");
    assert.equal(parked.slice(1).sort(), KINDS.filter((k) => k !== holder).map((k) => `${k}:wait`).sort());
    assert.is(await db.redis.send(["GET", `${namespace}:origin`]), "1");
    for (const r of results) assert.equal(r.values, Array(10).fill("value-1"), `${r.kind} got the one value`);
    assert.is(results.reduce((sum, r) => sum + r.stats.loads, 0), 1);
    assert.is(results.find((r) => r.kind === holder)!.stats.loads, 1);
  });
}

Processes.run();
