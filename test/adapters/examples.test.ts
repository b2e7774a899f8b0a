/**
 * Every `@example` of the adapters runs as written, as a user's program in
 * its own process against a real redis-server: the import of
 * "@herdless/herdless" points at this checkout's mod.ts, and the client
 * package at each dev-only version of it (ioredis 5 and 6; node-redis 4, 5
 * and 6; Bun's client under Bun only). Each `console.log(x); // y` line must
 * print y.
 */
import { spawn } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import process from "node:process";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { useRedis } from "../support/fixture.ts";

const isBun = (globalThis as { Bun?: unknown }).Bun !== undefined;
const root = fileURLToPath(new URL("../..", import.meta.url));
const here = fileURLToPath(new URL(".", import.meta.url));
const FILES = [
  "resp/adapters/mod.ts",
  "resp/adapters/ioredis.ts",
  "resp/adapters/node_redis.ts",
  "resp/adapters/bun_redis.ts",
];
// The package a user imports, and the dev-only aliases it is run with.
const VERSIONS: Record<string, readonly string[]> = {
  ioredis: ["ioredis5", "ioredis6"],
  redis: ["redis4", "redis5", "redis6"],
  bun: isBun ? ["bun"] : [],
};

interface Example {
  readonly file: string;
  readonly title: string;
  readonly code: string;
  /** The client package it imports. */
  readonly client: string;
}

function examples(file: string): Example[] {
  const text = readFileSync(`${root}/${file}`, "utf8");
  const found: Example[] = [];
  for (const m of text.matchAll(/@example ([^\n]*)\n \* ```ts\n([\s\S]*?) \* ```/g)) {
    const code = m[2]!.split("\n").map((line) => line.replace(/^ \* ?/, "")).join("\n");
    const client = code.match(/from "(ioredis|redis|bun)"/)?.[1];
    if (client === undefined) throw new Error(`${file}: example "${m[1]}" imports no client package`);
    found.push({ file, title: m[1]!, code, client });
  }
  return found;
}

/** What the example's `console.log(...); // expected` lines say it prints. */
function expected(code: string): string[] {
  return [...code.matchAll(/console\.log\(.*\); \/\/ (.*)$/gm)].map((m) => {
    const v = m[1]!.trim();
    return v.startsWith('"') ? JSON.parse(v) as string : v;
  });
}

function run(path: string, url: string): Promise<{ code: number | null; out: string; err: string }> {
  const args = isBun
    ? [path]
    : (globalThis as { Deno?: unknown }).Deno !== undefined
    ? ["run", "-A", path]
    : ["--import", "tsx", path];
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: { ...process.env, REDIS_URL: url },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (err += d));
  return new Promise((resolve) => child.on("exit", (code) => resolve({ code, out, err })));
}

const Examples = suite("adapters' @examples");
const db = useRedis(Examples, { clients: 0 });

const all = FILES.flatMap(examples);
Examples("every adapter function has an example, and each imports as published", () => {
  for (const fn of ["fromIoredis", "fromNodeRedis", "fromBunRedis"]) {
    assert.ok(all.some((e) => e.code.includes(`${fn}(`)), `${fn} has an example`);
  }
  for (const e of all) assert.match(e.code, /from "@herdless\/herdless";/, `${e.file}: "${e.title}"`);
});

for (const example of all) {
  const versions = VERSIONS[example.client]!;
  if (versions.length === 0) {
    process.stdout.write(
      `\n${example.file} "${example.title}": not run here; it needs Bun's RedisClient (runs under Bun)\n`,
    );
    continue;
  }
  Examples(`${example.file} "${example.title}" runs as written with ${versions.join(", ")}`, async () => {
    const runs = versions.map(async (version, i) => {
      const path = `${here}.example-${process.pid}-${all.indexOf(example)}-${i}.ts`;
      const code = example.code
        .replace(`from "@herdless/herdless"`, `from "../../mod.ts"`)
        .replace(`from "${example.client}"`, `from "${version}"`);
      writeFileSync(path, code);
      try {
        return { version, ...(await run(path, db.server.url)) };
      } finally {
        rmSync(path, { force: true });
      }
    });
    for (const r of await Promise.all(runs)) {
      assert.is(r.code, 0, `with ${r.version}: exited ${r.code}: ${r.err}`);
      assert.equal(r.out.trim().split("\n"), expected(example.code), `with ${r.version}`);
    }
  });
}

Examples.run();
