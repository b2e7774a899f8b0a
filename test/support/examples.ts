/**
 * Runs the documentation as a reader would paste it: every ```ts block of
 * README.md and docs/*.md and every JSDoc `@example` of the published
 * modules (mod.ts, resp/, strategies/), on Node (through tsx), Bun and Deno
 * (with exactly the permission flags the block's page prints: see
 * doc_blocks.ts), against a
 * redis-server started here on a free loopback port (`REDIS_URL`), and a
 * 6-node cluster for the examples that read `REDIS_CLUSTER_SEEDS`, and a
 * Sentinel group (1 master, 2 replicas, 3 sentinels) for those that read
 * `SENTINEL_URLS` (and `SENTINEL_NAME`). Then it
 * starts each server under examples/ with its npm script, sends one request,
 * checks the body and stops it.
 *
 *   node --import tsx test/support/examples.ts [--runtimes=node,bun,deno] [--no-build] [filter...]
 *
 * Each block is written to a scratch directory outside the repository, where
 * the package resolves only the way it does for a user:
 * - Node and Bun: `node_modules/herdless` (what `npm install herdless` gives)
 *   and `node_modules/@herdless/herdless` (what `npx jsr add
 *   @herdless/herdless` gives) both link to this package, so they load the
 *   built `dist/` through package.json `exports`, as published to npm;
 * - Deno: a deno.json import map, `"herdless"` and `"@herdless/herdless"` to
 *   this package's mod.ts: the line `deno add jsr:@herdless/herdless` (or
 *   the README's `deno add herdless@jsr:@herdless/herdless`) writes.
 * The blocks are type-checked there too, by `deno check` (source) and by
 * strict `tsc` (the published .d.ts). A block may not import a relative
 * path; the pages' blocks import `herdless`, JSDoc examples `@herdless/herdless`.
 * A block that cannot run on a runtime says why in a `// Not run on X:`
 * comment; it is reported as not run there, never as passed.
 *
 * A `console.log(...) // 42` line whose comment is made of literals (numbers,
 * booleans, null, quoted strings, arrays of them; a trailing `(...)` remark
 * is ignored) must print each of them: a cheap check of what the comments
 * promise. Every `npm run X` and `deno task X` in the pages' sh blocks must
 * exist.
 *
 * @module
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { createServer, type Server } from "node:http";
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import process from "node:process";
import { listenLoopback } from "./listen.ts";
import { type RedisServer, startRedis } from "./redis_server.ts";
import { type RedisCluster, startCluster } from "./redis_cluster.ts";
import { type SentinelGroup, startSentinelGroup } from "./redis_sentinel.ts";
import {
  blockProblem,
  expectedOutput,
  jsdocBlocks,
  markdownBlocks,
  type Runtime,
  RUNTIMES,
  type Snippet,
} from "./doc_blocks.ts";

const root = resolve(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "../..");
const bin = (name: string) => join(root, "node_modules", ".bin", name);
/** A process that runs longer than this has hung: it fails instead of stalling CI. */
const PROCESS_LIMIT_MS = 60_000;

// --- extraction (the rules live in doc_blocks.ts) ---

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(join(root, dir)).sort()) {
    const path = join(dir, name);
    // The adapters' examples need the real ioredis, node-redis or Bun client:
    // test/adapters/examples.test.ts runs each with every pinned version.
    if (name === "adapters") continue;
    if (statSync(join(root, path)).isDirectory()) sourceFiles(path, out);
    else if (name.endsWith(".ts")) out.push(path);
  }
  return out;
}

/** README.md, then every page under docs/, in name order. */
function markdownPages(): string[] {
  const docs = readdirSync(join(root, "docs")).filter((n) => n.endsWith(".md")).sort();
  return ["README.md", ...docs.map((n) => `docs/${n}`)];
}

// --- processes ---

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  out: string;
  timedOut: boolean;
}

function run(cmd: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }): Promise<Run> {
  return new Promise((done) => {
    const child = spawn(cmd, args, { cwd: options.cwd, env: options.env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout!.on("data", (d) => (out += d));
    child.stderr!.on("data", (d) => (out += d));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, PROCESS_LIMIT_MS);
    child.on("error", (e) => (out += `\n${e.message}`));
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      done({ code, signal, out, timedOut });
    });
  });
}

function commandFor(runtime: Runtime, s: Snippet, file: string, scratch: string): [string, string[]] {
  switch (runtime) {
    case "node": {
      const tsx = pathToFileURL(createRequire(join(root, "package.json")).resolve("tsx")).href;
      return [process.execPath, ["--import", tsx, file]];
    }
    case "bun":
      return [bin("bun"), [file]];
    case "deno":
      // The page's flags and no others; --config stands for the deno.json `deno add` leaves in the reader's project.
      return [bin("deno"), ["run", ...s.denoFlags!, "--config", join(scratch, "deno.json"), file]];
  }
}

// --- the scratch project a reader would have ---

function link(target: string, path: string): void {
  mkdirSync(dirname(path), { recursive: true });
  symlinkSync(target, path, "dir");
}

function scratchProject(snippets: readonly Snippet[], files: Map<Snippet, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "herdless-examples-"));
  const modules = join(dir, "node_modules");
  link(root, join(modules, "herdless"));
  link(root, join(modules, "@herdless", "herdless"));
  link(join(root, "node_modules", "@types", "node"), join(modules, "@types", "node"));
  // Other packages the blocks import (ioredis...) come from this repo's devDependencies.
  const bare = new Set<string>();
  for (const s of snippets) {
    for (const m of s.code.matchAll(/\bfrom\s+["']([^"'.][^"']*)["']/g)) {
      const spec = m[1]!;
      if (spec.startsWith("node:") || spec.startsWith("npm:") || spec.startsWith("jsr:")) continue;
      const name = spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0]!;
      if (name !== "herdless" && name !== "@herdless/herdless") bare.add(name);
    }
  }
  for (const name of bare) link(join(root, "node_modules", name), join(modules, name));
  const mod = pathToFileURL(join(root, "mod.ts")).href;
  const resp = pathToFileURL(join(root, "resp", "mod.ts")).href;
  const deno = JSON.parse(readFileSync(join(root, "deno.json"), "utf8")) as { compilerOptions: unknown };
  writeFileSync(
    join(dir, "deno.json"),
    JSON.stringify({
      imports: { "herdless": mod, "herdless/resp": resp, "@herdless/herdless": mod, "@herdless/herdless/resp": resp },
      nodeModulesDir: "manual",
      compilerOptions: deno.compilerOptions,
    }),
  );
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        target: "ES2022",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        lib: ["ES2022", "DOM"],
        types: ["node"],
        strict: true,
        noUncheckedIndexedAccess: true,
        exactOptionalPropertyTypes: true,
        skipLibCheck: true,
        noEmit: true,
      },
      include: ["*.mts"],
    }),
  );
  for (const s of snippets) {
    const name = s.where.replace(/[^A-Za-z0-9]+/g, "-").toLowerCase() + ".mts";
    writeFileSync(join(dir, name), s.code + "\n");
    files.set(s, join(dir, name));
  }
  return dir;
}

/** A stand-in for the README's products API, so its first example needs no network. */
function fakeApi(): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    const id = /^\/products\/(\d+)$/.exec(req.url ?? "")?.[1];
    if (id === undefined) res.writeHead(404).end();
    else {res.writeHead(200, { "content-type": "application/json" }).end(
        JSON.stringify({ id: Number(id), name: `Product ${id}` }),
      );}
  });
  return listenLoopback(server).then((port) => ({ url: `http://127.0.0.1:${port}`, server }));
}

// --- the servers under examples/ ---

interface ServerExample {
  /** The npm script that runs it, as the README documents. */
  script: string;
  file: string;
}

const SERVER_EXAMPLES: readonly ServerExample[] = [
  { script: "example", file: "examples/node-http.ts" },
  { script: "example:hono", file: "examples/hono.ts" },
  { script: "example:deno", file: "examples/deno-serve.ts" },
  { script: "example:bun", file: "examples/bun-serve.ts" },
  { script: "example:worker", file: "examples/worker.ts" },
];

/** Start one server example, wait for its "listening on" line, request a product, stop it. */
async function exerciseServer(example: ServerExample, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const scripts = (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: Record<string, string> })
    .scripts;
  const command = scripts[example.script];
  if (command === undefined) return `package.json has no "${example.script}" script`;
  if (!command.includes(example.file)) return `"${example.script}" does not run ${example.file}`;
  // What `npm run` does, minus npm in between (so SIGTERM reaches the server itself).
  const child: ChildProcess = spawn("sh", ["-c", `exec ${command}`], {
    cwd: root,
    env: { ...env, PORT: "0", PATH: `${join(root, "node_modules", ".bin")}:${env.PATH ?? ""}` },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const exited = new Promise<number | null>((done) => child.on("close", (code) => done(code)));
  const listening = new Promise<string>((done, fail) => {
    const onData = (d: Buffer) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) done(m[1]!);
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", (d) => (out += d));
    void exited.then((code) => fail(new Error(`exited with ${code} before listening`)));
  });
  const limit = setTimeout(() => child.kill("SIGKILL"), PROCESS_LIMIT_MS);
  try {
    const url = await listening;
    const res = await fetch(`${url}/products/42`);
    const body = await res.text();
    if (res.status !== 200 || body !== JSON.stringify({ id: 42, name: "Product 42" })) {
      return `GET /products/42 answered ${res.status} ${body}\n${out}`;
    }
    // The second request is a hit: both say what the cache did (RFC 9211) and how old the value is.
    const again = await fetch(`${url}/products/42`);
    await again.body?.cancel();
    const statuses = [res, again].map((r) => `${r.headers.get("cache-status")} / age ${r.headers.get("age")}`);
    if (
      !/^herdless; (fwd=miss; stored|hit; ttl=\d+) \/ age \d+$/.test(statuses[0]!) ||
      !/^herdless; hit; ttl=\d+ \/ age \d+$/.test(statuses[1]!)
    ) {
      return `GET /products/42 twice answered Cache-Status and Age ${statuses.join(", then ")}\n${out}`;
    }
    const missing = await fetch(`${url}/products/5000`);
    await missing.body?.cancel();
    if (missing.status !== 404) return `GET /products/5000 (not found) answered ${missing.status}\n${out}`;
    child.kill("SIGTERM");
    const code = await exited;
    if (code !== 0) return `exited with ${code} after SIGTERM (expected a clean shutdown)\n${out}`;
    return undefined;
  } catch (error) {
    child.kill("SIGKILL");
    return `${(error as Error).message}\n${out}`;
  } finally {
    clearTimeout(limit);
  }
}

// --- main ---

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  const runtimes = (args.find((a) => a.startsWith("--runtimes="))?.slice("--runtimes=".length).split(",") ??
    [...RUNTIMES]) as Runtime[];
  for (const r of runtimes) if (!RUNTIMES.includes(r)) throw new Error(`unknown runtime ${r}`);
  const filters = args.filter((a) => !a.startsWith("--"));
  const started = Date.now();
  const failures: string[] = [];
  const notRun: string[] = [];
  let passed = 0;

  // Extract.
  const pages = markdownPages().map((page) => ({
    page,
    ...markdownBlocks(readFileSync(join(root, page), "utf8"), page),
  }));
  let snippets: Snippet[] = pages.flatMap((p) => p.snippets);
  const fromPages = snippets.length;
  for (const file of ["mod.ts", ...sourceFiles("resp"), ...sourceFiles("strategies")]) {
    snippets.push(...jsdocBlocks(readFileSync(join(root, file), "utf8"), file));
  }
  snippets = snippets.filter((s) => filters.length === 0 || filters.some((f) => s.where.includes(f)));

  // Commands the pages print that must exist.
  const scripts = Object.keys(
    (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
      scripts: Record<string, string>;
    }).scripts,
  );
  const tasks = Object.keys(
    (JSON.parse(readFileSync(join(root, "deno.json"), "utf8")) as { tasks?: Record<string, string> }).tasks ?? {},
  );
  for (const { page, shell } of pages) {
    for (const line of shell) {
      for (const m of line.matchAll(/\bnpm run ([\w:-]+)/g)) {
        if (!scripts.includes(m[1]!)) failures.push(`${page}: \`npm run ${m[1]}\` is not a script in package.json`);
      }
      for (const m of line.matchAll(/\bdeno task ([\w:-]+)/g)) {
        if (!tasks.includes(m[1]!)) failures.push(`${page}: \`deno task ${m[1]}\` is not a task in deno.json`);
      }
    }
  }
  const refused = new Set<Snippet>();
  for (const s of snippets) {
    const problem = blockProblem(s);
    if (problem !== undefined) {
      failures.push(`${s.where}: ${problem}`);
      refused.add(s);
    }
  }

  if (!args.includes("--no-build")) {
    const build = spawnSync("npm", ["run", "--silent", "build"], { cwd: root, stdio: "inherit" });
    if (build.status !== 0) throw new Error("npm run build failed");
  }

  const files = new Map<Snippet, string>();
  const scratch = scratchProject(snippets, files);
  const servers = new Map<Runtime, RedisServer>();
  let cluster: RedisCluster | undefined;
  let sentinel: SentinelGroup | undefined;
  let api: { url: string; server: Server } | undefined;
  try {
    // Type-check every block: against the source (Deno) and the published .d.ts (tsc).
    if (snippets.length > 0) {
      const denoCheck = await run(bin("deno"), ["check", "--config", join(scratch, "deno.json"), ...files.values()], {
        cwd: scratch,
        env: { ...process.env, NO_COLOR: "1" },
      });
      if (denoCheck.code !== 0) failures.push(`deno check of the examples failed:\n${denoCheck.out}`);
      else passed++;
      const tsc = await run(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", scratch], {
        cwd: scratch,
        env: process.env,
      });
      if (tsc.code !== 0) {
        failures.push(`strict tsc of the examples (against dist/*.d.ts) failed:\n${tsc.out.replaceAll(scratch, "")}`);
      } else passed++;
    }

    api = await fakeApi();
    const needsCluster = snippets.some((s) => !refused.has(s) && s.code.includes("REDIS_CLUSTER_SEEDS"));
    const needsSentinel = snippets.some((s) => !refused.has(s) && s.code.includes("SENTINEL_URLS"));
    await Promise.all([
      ...runtimes.map(async (r) => servers.set(r, await startRedis())),
      needsCluster ? startCluster().then((c) => (cluster = c)) : undefined,
      needsSentinel ? startSentinelGroup().then((g) => (sentinel = g)) : undefined,
    ]);

    // Each runtime runs its blocks one after another, against its own server; the runtimes run side by side.
    await Promise.all(runtimes.map(async (runtime) => {
      const server = servers.get(runtime)!;
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        NO_COLOR: "1",
        REDIS_URL: server.url,
        PRODUCTS_API: api!.url,
        ...(cluster ? { REDIS_CLUSTER_SEEDS: cluster.seeds.join(",") } : {}),
        ...(sentinel ? { SENTINEL_URLS: sentinel.sentinelUrls.join(","), SENTINEL_NAME: sentinel.name } : {}),
      };
      for (const s of snippets) {
        if (refused.has(s)) continue; // never run: counted as failed above
        const reason = s.notOn.get(runtime);
        if (reason !== undefined) {
          notRun.push(`${s.where} on ${runtime}: ${reason}`);
          continue;
        }
        server.cli("FLUSHALL");
        const [cmd, cmdArgs] = commandFor(runtime, s, files.get(s)!, scratch);
        const r = await run(cmd, cmdArgs, { cwd: scratch, env });
        const missing = expectedOutput(s.code).filter((token) => !r.out.includes(token));
        if (r.timedOut) failures.push(`${s.where} on ${runtime}: still running after ${PROCESS_LIMIT_MS} ms\n${r.out}`);
        else if (r.code !== 0) failures.push(`${s.where} on ${runtime}: exited with ${r.code ?? r.signal}\n${r.out}`);
        else if (missing.length > 0) {
          failures.push(
            `${s.where} on ${runtime}: its comments promise ${JSON.stringify(missing)}, printed:\n${r.out}`,
          );
        } else passed++;
      }
    }));

    // The servers under examples/, one request each.
    if (filters.length === 0 || filters.some((f) => f.startsWith("examples"))) {
      let server = servers.get("node");
      if (server === undefined) servers.set("node", server = await startRedis());
      for (const example of SERVER_EXAMPLES) {
        server.cli("FLUSHALL");
        const problem = await exerciseServer(example, { ...process.env, REDIS_URL: server.url });
        if (problem !== undefined) failures.push(`${example.file} (npm run ${example.script}): ${problem}`);
        else passed++;
      }
    }
  } finally {
    api?.server.close();
    await Promise.all([...servers.values()].map((s) => s.stop()));
    await cluster?.stop();
    await sentinel?.stop();
    rmSync(scratch, { recursive: true, force: true });
  }

  for (const n of notRun) console.log(`not run (as its comment says): ${n}`);
  for (const f of failures) console.error(`\nFAIL ${f}`);
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  console.log(
    `\nexamples: ${snippets.length} blocks (${fromPages} in README.md and docs/) x ${runtimes.join(", ")}, ` +
      `type checks, ${SERVER_EXAMPLES.length} servers in examples/, in ${seconds} s`,
  );
  console.log(`${passed} passed, ${failures.length} failed, ${notRun.length} not run`);
  return failures.length === 0 ? 0 : 1;
}

process.exitCode = await main();
