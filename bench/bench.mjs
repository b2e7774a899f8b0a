// `npm run bench` starts here (plain JS, so it needs nothing installed):
// 1. installs bench/'s own dependencies (ioredis, node-redis, esbuild) when
//    they are missing or older than bench/package-lock.json;
// 2. bundles the bench (and herdless' TypeScript sources it measures) into
//    bench/.out/ with esbuild, so every measured process runs plain JS with
//    no loader in it, on Node and on Bun alike;
// 3. runs bench/.out/run.mjs with the arguments given (see bench/run.ts).
import { spawnSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const benchDir = dirname(fileURLToPath(import.meta.url));
const lock = join(benchDir, "package-lock.json");
const installed = join(benchDir, "node_modules", ".package-lock.json");

if (
  !existsSync(installed) || statSync(installed).mtimeMs < statSync(lock).mtimeMs
) {
  process.stderr.write("bench: installing bench/ dependencies (npm ci)\n");
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  const r = spawnSync(npm, [
    "ci",
    "--no-audit",
    "--no-fund",
    "--loglevel=error",
  ], {
    cwd: benchDir,
    stdio: ["ignore", 2, 2],
  });
  if (r.status !== 0) {
    process.stderr.write(
      `bench: npm ci in bench/ failed (${r.status ?? r.error})\n`,
    );
    process.exit(1);
  }
}

const { build } = await import(pathToFileURL(join(benchDir, "build.mjs")).href);
await build();
await import(pathToFileURL(join(benchDir, ".out", "run.mjs")).href);
