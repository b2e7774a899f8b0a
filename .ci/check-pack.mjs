// The npm tarball ships dist, README and LICENSE only, and dist/mod.js loads.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const out = execFileSync("npm", ["pack", "--dry-run", "--json"], { encoding: "utf8" });
const files = JSON.parse(out)[0].files.map((f) => f.path);
const stray = files.filter((f) =>
  !(f.startsWith("dist/") || f === "README.md" || f === "LICENSE" || f === "package.json")
);
if (stray.length > 0) {
  console.error("npm pack would ship files outside dist/, README.md, LICENSE:", stray);
  process.exit(1);
}
if (!files.includes("dist/mod.js") || !files.includes("dist/mod.d.ts")) {
  console.error("npm pack lacks dist/mod.js or dist/mod.d.ts:", files);
  process.exit(1);
}
// Every entry of the export map (".", "./resp", "./strategy") ships its code and its types.
const { exports: entries } = JSON.parse(
  execFileSync("node", ["-e", "process.stdout.write(require('fs').readFileSync('package.json','utf8'))"], {
    encoding: "utf8",
  }),
);
for (const [entry, target] of Object.entries(entries)) {
  for (const file of [target.types, target.default]) {
    if (!files.includes(file.replace(/^\.\//, ""))) {
      console.error(`npm pack lacks ${file}, the ${entry} entry of package.json`);
      process.exit(1);
    }
  }
}
const mod = await import(new URL("../dist/mod.js", import.meta.url).href);
for (const name of ["connect", "pipeline", "lease", "Script", "RedisClient"]) {
  if (!(name in mod)) {
    console.error(`dist/mod.js does not export ${name}`);
    process.exit(1);
  }
}
console.log(`npm pack: ${files.length} files, all in dist/, README.md, LICENSE; dist/mod.js exports the public API`);

// The README promises require("herdless") from CommonJS on Node >= 20.19 and >= 22.12 (require(esm)).
const [major, minor] = process.versions.node.split(".").map(Number);
if ((major === 20 && minor >= 19) || (major === 22 && minor >= 12) || major > 22) {
  const { createRequire } = await import("node:module");
  const required = createRequire(import.meta.url)("herdless");
  if (
    typeof required.pipeline !== "function" ||
    typeof createRequire(import.meta.url)("herdless/resp").Decoder !== "function"
  ) {
    console.error(`require("herdless") on Node ${process.versions.node} lacks the public API`);
    process.exit(1);
  }
  console.log(`require("herdless") and require("herdless/resp") work on Node ${process.versions.node}`);
}

// npm users installed "herdless": the examples in the .d.ts an editor shows must import that name.
const distFiles = files.filter((f) => f.endsWith(".js") || f.endsWith(".d.ts"));
const jsrName = distFiles.filter((f) =>
  readFileSync(new URL(`../${f}`, import.meta.url), "utf8").includes('"@herdless/herdless')
);
if (jsrName.length > 0) {
  console.error('dist/ examples import "@herdless/herdless", which npm users do not have:', jsrName);
  process.exit(1);
}
const untyped = distFiles.filter((f) =>
  f.endsWith(".js") && !readFileSync(new URL(`../${f}`, import.meta.url), "utf8").startsWith("// @ts-self-types=")
);
if (untyped.length > 0) {
  console.error("dist/ .js files without // @ts-self-types (a Deno path import loses their types):", untyped);
  process.exit(1);
}

// A Deno user importing dist/mod.js by path gets its types: a correct use checks, a wrong one is refused.
const deno = new URL("../node_modules/.bin/deno", import.meta.url).pathname;
const scratch = mkdtempSync(join(tmpdir(), "herdless-dist-types-"));
const distMod = new URL("../dist/mod.js", import.meta.url).href;
const check = (name, body) => {
  const file = join(scratch, name);
  writeFileSync(file, `import { coalesce, connect, lease, pipeline } from "${distMod}";\n${body}\n`);
  try {
    execFileSync(deno, ["check", "--quiet", file], {
      cwd: scratch,
      stdio: "pipe",
      env: { ...process.env, NO_COLOR: "1" },
    });
    return "";
  } catch (error) {
    return String(error.stdout) + String(error.stderr);
  }
};
try {
  const use = 'const redis = await connect("redis://127.0.0.1:6379");\n' +
    "const cache = pipeline<{ n: number }>({ redis, ttlMs: 1000 }, coalesce(), lease());\n";
  const good = check("good.ts", `${use}const n: number = (await cache.get("k", () => ({ n: 1 }))).n;\nconsole.log(n);`);
  const bad = check("bad.ts", `${use}const s: string = (await cache.get("k", () => ({ n: 1 }))).n;\nconsole.log(s);`);
  if (good !== "" || !bad.includes("TS2322")) {
    console.error("deno check of a path import of dist/mod.js: a correct use must check, a wrong one fail", good, bad);
    process.exit(1);
  }
  console.log("deno check: a path import of dist/mod.js carries its types (@ts-self-types)");
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
