// Bundles bench/run.ts and bench/worker.ts into bench/.out/ with esbuild.
// The peers (ioredis, redis) and Bun's "bun" module stay external: they are
// loaded from bench/node_modules (or the runtime) only by the worker that
// measures them.
//
// `herdless:cache` is bound here to the first module that exports
// `pipeline`: the root mod.ts, then strategies/mod.ts, then pipeline.ts.
// The strategies are written alongside the bench, so when none of them
// builds yet the bench gets a stub saying why, and reports
// "pipeline not available" rather than a figure.
import { existsSync, mkdirSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const benchDir = dirname(fileURLToPath(import.meta.url));
const rootDir = resolve(benchDir, "..");
const outDir = join(benchDir, ".out");
const esbuild = await import(pathToFileURL(join(benchDir, "node_modules", "esbuild", "lib", "main.js")).href);

const common = {
  bundle: true,
  format: "esm",
  platform: "node",
  target: "esnext",
  logLevel: "silent",
  external: ["ioredis", "redis", "bun"],
};

/** Which module provides `pipeline`, or why none does. */
async function findCacheModule() {
  const reasons = [];
  for (const candidate of ["mod.ts", "strategies/mod.ts", "pipeline.ts"]) {
    const path = join(rootDir, candidate);
    if (!existsSync(path)) {
      reasons.push(`${candidate} does not exist`);
      continue;
    }
    try {
      const r = await esbuild.build({ ...common, entryPoints: [path], write: false, metafile: true, outdir: outDir });
      const exports = Object.values(r.metafile.outputs).flatMap((o) => o.exports ?? []);
      if (exports.includes("pipeline")) return { path };
      reasons.push(`${candidate} exports no pipeline()`);
    } catch (error) {
      const first = error.errors?.[0];
      const where = first?.location ? `${first.location.file}:${first.location.line}: ` : "";
      reasons.push(`${candidate} does not build (${where}${first?.text ?? error.message})`);
    }
  }
  return { unavailable: reasons.join("; ") };
}

export async function build() {
  mkdirSync(outDir, { recursive: true });
  const cache = await findCacheModule();
  const cachePlugin = {
    name: "herdless-cache",
    setup(b) {
      b.onResolve({ filter: /^herdless:cache$/ }, () =>
        cache.path !== undefined ? { path: cache.path } : { path: "stub", namespace: "herdless-cache" });
      b.onLoad({ filter: /.*/, namespace: "herdless-cache" }, () => ({
        contents: `export const unavailable = ${JSON.stringify(cache.unavailable)};`,
        loader: "js",
      }));
    },
  };
  await esbuild.build({
    ...common,
    entryPoints: { run: join(benchDir, "run.ts"), worker: join(benchDir, "worker.ts") },
    outdir: outDir,
    outExtension: { ".js": ".mjs" },
    plugins: [cachePlugin],
  });
  if (cache.path !== undefined) process.stderr.write(`bench: cache pipeline from ${relative(rootDir, cache.path)}\n`);
}
