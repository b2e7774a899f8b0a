/**
 * `npm run lab`: the stampede laboratory. Starts a disposable redis-server
 * (or uses `REDIS_URL`), runs each scenario with no protection and then with
 * the layers added one at a time, prints a table per scenario, and writes
 * one SVG chart per scenario (and JSON or Markdown on request).
 *
 * Quick by default (under a minute on 2 shared cores, a first command; CI
 * runs it): shorter runs, and the scenarios and stories that take longest
 * left out, named at the end of the run.
 *
 * Flags:
 *   --full           every scenario at full length (about 2 min)
 *   --quick          the default, said explicitly
 *   --json <file>    write every result, time series included
 *   --md <file>      write the printed report to a file too
 *   --out <dir>      where the charts go (default lab/out)
 *   --only <ids>     run some scenarios, e.g. --only hot-key,flush
 *
 * Exit status: 0 unless a scenario crashed or a count was impossible
 * (never because something was slow: the machine may be busy).
 *
 * @module
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { dirname, join, relative } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { progress } from "./report/progress.ts";
import { labServer } from "./server.ts";
import { chartSvg } from "./report/svg.ts";
import { formatScenario } from "./report/table.ts";
import type { Scenario, ScenarioResult } from "./types.ts";
import { coldBurst } from "./scenarios/cold_burst.ts";
import { failingOrigin } from "./scenarios/failing_origin.ts";
import { failover } from "./scenarios/failover.ts";
import { flush } from "./scenarios/flush.ts";
import { hotKey } from "./scenarios/hot_key.ts";
import { isolates } from "./scenarios/isolates.ts";
import { manyKeys } from "./scenarios/many_keys.ts";
import { nearCache } from "./scenarios/near.ts";
import { recipes } from "./scenarios/recipes.ts";
import { xfetchPaper } from "./scenarios/xfetch.ts";
import { slowOrigin } from "./scenarios/slow_origin.ts";

const SCENARIOS: Scenario[] = [
  coldBurst,
  hotKey,
  manyKeys,
  slowOrigin,
  failingOrigin,
  flush,
  nearCache,
  recipes,
  xfetchPaper,
  failover,
  isolates,
];
const HERE = dirname(fileURLToPath(import.meta.url));

const { values: flags } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    full: { type: "boolean", default: false },
    json: { type: "string" },
    md: { type: "string" },
    out: { type: "string", default: join(HERE, "..", "out") },
    only: { type: "string" },
    help: { type: "boolean", short: "h", default: false },
  },
});
if (flags.help) {
  process.stdout.write("usage: npm run lab -- [--full] [--json file] [--md file] [--out dir] [--only id,id]\n");
  process.stdout.write(`scenarios: ${SCENARIOS.map((s) => s.id).join(", ")}\n`);
  process.exit(0);
}
if (flags.quick && flags.full) {
  process.stderr.write("--quick and --full exclude each other (quick is the default)\n");
  process.exit(2);
}
const quick = !flags.full;
const only = flags.only?.split(",").map((s) => s.trim());
const unknown = only?.filter((id) => !SCENARIOS.some((s) => s.id === id)) ?? [];
if (unknown.length > 0) {
  process.stderr.write(`unknown scenario(s): ${unknown.join(", ")}; known: ${SCENARIOS.map((s) => s.id).join(", ")}\n`);
  process.exit(2);
}
// n: the scenario's number among all of them (it names its chart); the progress line counts the chosen ones.
const chosen = SCENARIOS.map((s, i) => ({ s, n: i + 1 })).filter(({ s }) =>
  only === undefined ? !(quick && s.fullOnly) : only.includes(s.id)
);
// What the quick lab leaves out, said at its end so nobody mistakes it for the full one.
const skipped = SCENARIOS.filter((s) => !chosen.some((c) => c.s === s)).map((s) => s.id);
// A scenario --only names runs whole.
const cut = quick && only === undefined;
const shortened = cut ? chosen.flatMap(({ s }) => (s.quickLeavesOut === undefined ? [] : [s.quickLeavesOut])) : [];
const leftOut = [
  ...(quick && only === undefined && skipped.length > 0 ? [`the scenarios ${skipped.join(", ")}`] : []),
  ...shortened,
];

// Ctrl-C runs the exit hooks, which kill the disposable redis-server.
process.on("SIGINT", () => process.exit(130));
// A safety net, far above the budgets (about 2 min full, 1 min quick): CI must never hang on the lab.
const watchdog = setTimeout(() => {
  process.stderr.write("\nlab: exceeded its time limit; stopping\n");
  process.exit(1);
}, quick ? 300_000 : 600_000);
watchdog.unref();

const started = performance.now();
const report: string[] = [];
const bar = progress();
const print = (text: string, markdown = text) => {
  bar.clear();
  process.stdout.write(`${text}\n`);
  report.push(markdown);
};
const server = await labServer();
const machine = `${cpus().length} x ${cpus()[0]?.model.trim() ?? "cpu"}`;
print(`## herdless stampede lab${quick ? " (quick)" : " (--full)"}`);
print("");
print(
  `${new Date().toISOString().slice(0, 10)}, Node ${process.version}, Redis ${server.version}${
    server.owned ? " (disposable, loopback)" : " (REDIS_URL)"
  }, ${machine}.`,
);
print(
  "Each set runs side by side with the others on its own pools, keys and simulated origin; origin calls and peaks are exact counts, latencies depend on the machine.",
);

const results: ScenarioResult[] = [];
const crashes: string[] = [];
mkdirSync(flags.out, { recursive: true });
for (const [k, { s, n }] of chosen.entries()) {
  const t = performance.now();
  try {
    const result = await s.run({
      url: server.url,
      quick,
      cut,
      flush: () => server.flush(),
      progress: (text) => bar.show(`lab${quick ? "" : " --full"}, scenario ${k + 1} of ${chosen.length}: ${text}`),
    });
    results.push(result);
    // A scenario of several stories (the recipes) gets a chart per story.
    const charts = result.parts === undefined
      ? [{ file: join(flags.out, `${n}-${s.id}.svg`), svg: chartSvg(n, result) }]
      : result.parts.map((p, i) => ({
        file: join(flags.out, `${n}-${s.id}-${p.id}.svg`),
        svg: chartSvg(`${n}.${i + 1}`, p),
      }));
    for (const c of charts) writeFileSync(c.file, c.svg);
    const file = charts[0]!.file;
    print("");
    print(formatScenario(n, result));
    print("");
    const took = `${((performance.now() - t) / 1000).toFixed(1)} s`;
    // The Markdown file embeds the chart by a path relative to itself.
    const embed = flags.md === undefined ? "" : relative(dirname(flags.md), file);
    print(
      `chart${charts.length > 1 ? "s" : ""}: ${
        charts.map((c) => relative(process.cwd(), c.file)).join(", ")
      } (${took})`,
      `![${s.title}: ${result.seriesLabel ?? "origin calls"} over time](${embed}) (${took})`,
    );
  } catch (error) {
    crashes.push(`${s.id}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    print("");
    print(`### ${n}. ${s.title}: CRASHED`);
    print("");
    print(String(error instanceof Error ? error.message : error));
  }
}
await server.stop();

const seconds = (performance.now() - started) / 1000;
const problems = results.flatMap((r) => r.problems);
print("");
print(
  `lab finished in ${seconds.toFixed(1)} s${
    quick ? " (quick)" : " (--full)"
  }: ${results.length} scenario(s), ${problems.length} impossible count(s), ${crashes.length} crash(es).`,
);
if (leftOut.length > 0) print(`The quick lab left out ${leftOut.join(", and ")}: npm run lab -- --full runs them.`);
for (const p of problems) print(`- impossible count: ${p}`);
for (const c of crashes) process.stderr.write(`crash: ${c}\n`);

if (flags.json !== undefined) {
  mkdirSync(dirname(flags.json), { recursive: true });
  const meta = {
    date: new Date().toISOString(),
    node: process.version,
    redis: server.version,
    machine,
    quick,
    seconds,
  };
  writeFileSync(flags.json, `${JSON.stringify({ meta, scenarios: results, problems, crashes }, null, 1)}\n`);
}
if (flags.md !== undefined) {
  mkdirSync(dirname(flags.md), { recursive: true });
  writeFileSync(flags.md, `${report.join("\n")}\n`);
}
// Exit explicitly: a reconnecting client or a child's pipe must not keep a finished lab alive.
process.exit(crashes.length > 0 || problems.length > 0 ? 1 : 0);
