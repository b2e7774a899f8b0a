// Runs before `npm test` and `npm run lab` (pretest, prelab), so both work as
// the first commands in a fresh clone. Plain JavaScript with no dependency:
// it runs before anything is installed.
//
// - A devDependency missing from node_modules (a fresh clone, or one added
//   since the last install): run `npm ci` once. Otherwise it costs a few
//   existsSync calls.
// - No redis-server: say in one line what to install, and fail (the lab needs
//   none when REDIS_URL names a server).
//
// Usage: node test/support/setup.mjs test|lab
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";

const root = join(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "..", "..");
const purpose = process.argv[2] ?? "test";

const { devDependencies = {} } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const missing = Object.keys(devDependencies).filter((name) =>
  !existsSync(join(root, "node_modules", name, "package.json"))
);
if (missing.length > 0) {
  const what = existsSync(join(root, "node_modules")) ? `${missing.join(", ")} not installed` : "no node_modules";
  console.error(`herdless: ${what}; running npm ci first (once, under a minute)`);
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  const ci = spawnSync(npm, ["ci", "--no-audit", "--no-fund"], { cwd: root, stdio: "inherit" });
  if (ci.status !== 0) {
    console.error(`herdless: npm ci failed (exit ${ci.status ?? ci.signal}); run it yourself to see why`);
    process.exit(1);
  }
}

// The adapters' tests run against the real ioredis and node-redis, the
// workerd tests under the real workerd (miniflare), and the schema tests
// against zod and valibot, each kept in a dev-only folder of its own (never a
// dependency of herdless).
const folders = [
  ["adapters", "the adapters' test clients"],
  ["workerd", "workerd (miniflare)"],
  ["schema", "the Standard Schema libraries (zod, valibot)"],
];
for (const [folder, what] of folders) {
  const dir = join(root, "test", folder);
  if (purpose !== "test" || !existsSync(join(dir, "package.json"))) continue;
  const { devDependencies: theirs = {} } = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  if (Object.keys(theirs).some((name) => !existsSync(join(dir, "node_modules", name, "package.json")))) {
    console.error(`herdless: installing ${what} (test/${folder}) first`);
    const npm = process.platform === "win32" ? "npm.cmd" : "npm";
    const ci = spawnSync(npm, ["ci", "--no-audit", "--no-fund"], { cwd: dir, stdio: "inherit" });
    if (ci.status !== 0) {
      console.error(`herdless: npm ci in test/${folder} failed (exit ${ci.status ?? ci.signal})`);
      process.exit(1);
    }
  }
}

const external = purpose === "lab" && (process.env.REDIS_URL ?? "") !== "";
if (!external) {
  const server = process.env.REDIS_SERVER ?? "redis-server";
  const probe = spawnSync(server, ["--version"], { encoding: "utf8" });
  if (probe.error || probe.status !== 0) {
    const also = purpose === "lab"
      ? ", or set REDIS_URL=redis://host:port to run the lab against a server you have"
      : " (the tests start their own servers, and need redis-cli beside it)";
    console.error(
      `herdless: '${server}' not found: install Redis >= 6.2 (apt-get install redis-server, or brew install redis), ` +
        `or set REDIS_SERVER to its path${also}`,
    );
    process.exit(1);
  }
}
