// The npm tarball ships dist, README and LICENSE only, and dist/mod.js loads.
import { execFileSync } from "node:child_process";

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
