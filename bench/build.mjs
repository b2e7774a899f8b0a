// Bundles bench/run.ts and bench/worker.ts into bench/.out/ with esbuild.
// The peers (ioredis, redis, bentocache, cachified and its node-redis
// adapter) and Bun's "bun" module stay external: they are loaded from
// bench/node_modules (or the runtime) only by the worker that measures them
// (bundled into ESM, bentocache's CommonJS dependencies fail on
// `require("crypto")`).
//
// `herdless:cache` is bound here to the first module that exports
// `pipeline`: the root mod.ts, then strategies/mod.ts, then pipeline.ts,
// then strategies/pipeline.ts with the strategy files beside it.
// The strategies are written alongside the bench, so when none of them
// builds yet the bench gets a stub saying why, and reports
// "pipeline not available" rather than a figure.
import { existsSync, mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const benchDir = dirname(fileURLToPath(import.meta.url));
const rootDir = resolve(benchDir, "..");
const outDir = join(benchDir, ".out");
const esbuild = await import(
  pathToFileURL(join(benchDir, "node_modules", "esbuild", "lib", "main.js"))
    .href
);

const common = {
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
};

const STRATEGY_FILES = [
  "pipeline",
  "coalesce",
  "limit",
  "lease",
  "jitter",
  "xfetch",
  "swr",
];

/** Which module provides `pipeline`, or why none does. */
async function findCacheModule() {
  const reasons = [];
  const candidates = ["mod.ts", "strategies/mod.ts", "pipeline.ts"].map((
    name,
  ) => ({
    name,
    path: join(rootDir, name),
  }));
  // Before strategies/mod.ts exists: an entry re-exporting the strategy files that do.
  const files = STRATEGY_FILES.filter((f) => existsSync(join(rootDir, "strategies", `${f}.ts`)));
  candidates.push({
    name: "strategies/{" + STRATEGY_FILES.join(",") + "}.ts",
    path: files.includes("pipeline")
      ? join(rootDir, "strategies", "pipeline.ts")
      : join(rootDir, "strategies", "(none).ts"),
    contents: files.map((f) => `export * from "./strategies/${f}.ts";`).join(
      "\n",
    ),
  });
  for (const candidate of candidates) {
    if (!existsSync(candidate.path)) {
      reasons.push(`${candidate.name} does not exist`);
      continue;
    }
    const entry = candidate.contents === undefined ? { entryPoints: [candidate.path] } : {
      stdin: {
        contents: candidate.contents,
        resolveDir: rootDir,
        loader: "ts",
        sourcefile: "herdless-cache-entry.ts",
      },
    };
    try {
      const r = await esbuild.build({
        ...common,
        ...entry,
        write: false,
        metafile: true,
        outdir: outDir,
      });
      const exports = Object.values(r.metafile.outputs).flatMap((o) => o.exports ?? []);
      if (exports.includes("pipeline")) {
        return { name: candidate.name, ...entry };
      }
      reasons.push(`${candidate.name} exports no pipeline()`);
    } catch (error) {
      const first = error.errors?.[0];
      const where = first?.location ? `${first.location.file}:${first.location.line}: ` : "";
      reasons.push(
        `${candidate} does not build (${where}${first?.text ?? error.message})`,
      );
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
      b.onResolve(
        { filter: /^herdless:cache$/ },
        () =>
          cache.entryPoints !== undefined
            ? { path: cache.entryPoints[0] }
            : { path: "entry", namespace: "herdless-cache" },
      );
      b.onLoad(
        { filter: /.*/, namespace: "herdless-cache" },
        () =>
          cache.stdin !== undefined
            ? {
              contents: cache.stdin.contents,
              resolveDir: cache.stdin.resolveDir,
              loader: "ts",
            }
            : {
              contents: `export const unavailable = ${JSON.stringify(cache.unavailable)};`,
              loader: "js",
            },
      );
    },
  };
  await esbuild.build({
    ...common,
    entryPoints: {
      run: join(benchDir, "run.ts"),
      worker: join(benchDir, "worker.ts"),
    },
    outdir: outDir,
    outExtension: { ".js": ".mjs" },
    plugins: [cachePlugin],
  });
  if (cache.name !== undefined) {
    process.stderr.write(`bench: cache pipeline from ${cache.name}\n`);
  }
}
