// Bundles bench/run.ts and bench/worker.ts into bench/.out/ with esbuild,
// herdless' TypeScript sources included (the drivers import the package's
// entries, mod.ts and resp/mod.ts), so every measured process runs plain JS.
// The peers (ioredis, redis, bentocache, cachified and its node-redis
// adapter) and Bun's "bun" module stay external: they are loaded from
// bench/node_modules (or the runtime) only by the worker that measures them
// (bundled into ESM, bentocache's CommonJS dependencies fail on
// `require("crypto")`).
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const benchDir = dirname(fileURLToPath(import.meta.url));
const outDir = join(benchDir, ".out");
const esbuild = await import(
  pathToFileURL(join(benchDir, "node_modules", "esbuild", "lib", "main.js"))
    .href
);

export async function build() {
  mkdirSync(outDir, { recursive: true });
  await esbuild.build({
    bundle: true,
    format: "esm",
    platform: "node",
    target: "esnext",
    logLevel: "silent",
    external: [
      "ioredis",
      "redis",
      "bun",
      "bentocache",
      "bentocache/*",
      "@epic-web/cachified",
      "cachified-redis-adapter",
    ],
    entryPoints: {
      run: join(benchDir, "run.ts"),
      worker: join(benchDir, "worker.ts"),
    },
    outdir: outDir,
    outExtension: { ".js": ".mjs" },
  });
}
