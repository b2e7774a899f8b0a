/**
 * The shape ARCHITECTURE.md promises and nothing else checks, over `resp/`,
 * `strategies/` and the root `mod.ts`:
 *
 * - a folder (any directory under `resp/` or `strategies/`) is entered only
 *   through its `mod.ts` from outside it (tests may reach inside);
 * - a folder's `mod.ts`, like every `mod.ts`, only re-exports;
 * - no import cycle, not even through `import type`;
 * - `resp/` imports nothing outside itself, `strategies/` nothing but
 *   `resp/` and itself; a bare specifier is a `node:` built-in, or a
 *   runtime-only module (`cloudflare:sockets`) reached by a dynamic import;
 * - a `_` file lives at the top of a layer and only its own directory imports it;
 * - ARCHITECTURE.md names every source folder, and every folder and file it names exists;
 * - every file name is snake_case (one case across the repository).
 *
 * Each rule has a self-test feeding it a made-up tree that breaks it.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, resolve } from "node:path";

const root = resolve(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "../..");
const LAYERS = ["resp/", "strategies/"] as const;
/** Modules that exist only on some runtime: reachable by a dynamic import, never a static one. */
const RUNTIME_ONLY = new Set(["cloudflare:sockets"]);

/** One import or re-export of a file: its specifier, and whether it is a dynamic `import()`. */
interface Edge {
  readonly spec: string;
  readonly dynamic: boolean;
}
/** Repository-relative path of each source file (`resp/cluster/client.ts`) to its imports. */
type Graph = Map<string, Edge[]>;

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(join(root, dir)).sort()) {
    const path = `${dir}${name}`;
    if (statSync(join(root, path)).isDirectory()) sourceFiles(`${path}/`, out);
    else if (name.endsWith(".ts")) out.push(path);
  }
  return out;
}

/** Comments go first: JSDoc examples import the package by name, and they are not edges. */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
}

function edgesOf(text: string): Edge[] {
  const body = code(text);
  return [
    ...[...body.matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s+"([^"]+)"/gm)].map((m) => m[1]!),
    ...[...body.matchAll(/^\s*import\s+"([^"]+)"/gm)].map((m) => m[1]!),
  ].map((spec): Edge => ({ spec, dynamic: false })).concat(
    [...body.matchAll(/\bimport\(\s*"([^"]+)"\s*\)/g)].map((m): Edge => ({ spec: m[1]!, dynamic: true })),
  );
}

function readGraph(): Graph {
  const graph: Graph = new Map();
  for (const file of ["mod.ts", ...LAYERS.flatMap((layer) => sourceFiles(layer))]) {
    graph.set(file, edgesOf(readFileSync(join(root, file), "utf8")));
  }
  return graph;
}

/** Where a relative specifier of `file` points, repository-relative; undefined for a bare one. */
function target(file: string, spec: string): string | undefined {
  if (!spec.startsWith("./") && !spec.startsWith("../")) return undefined;
  return normalize(join(dirname(file), spec)).replaceAll("\\", "/");
}

function layerOf(file: string): string | undefined {
  return LAYERS.find((layer) => file.startsWith(layer));
}

/** The folders holding `file`, outermost first: `resp/cluster/x.ts` -> [`resp/cluster/`]. */
function foldersOf(file: string): string[] {
  const layer = layerOf(file);
  if (layer === undefined) return [];
  const parts = file.slice(layer.length).split("/").slice(0, -1);
  return parts.map((_, i) => `${layer}${parts.slice(0, i + 1).join("/")}/`);
}

/** Imports that reach into a folder from outside it other than through its `mod.ts`. */
function boundaryViolations(graph: Graph): string[] {
  const found: string[] = [];
  for (const [file, edges] of graph) {
    for (const { spec } of edges) {
      const to = target(file, spec);
      if (to === undefined) continue;
      const entered = foldersOf(to).find((folder) => !file.startsWith(folder));
      if (entered !== undefined && to !== `${entered}mod.ts`) {
        found.push(`${file} imports ${spec}: outside ${entered}, import ${entered}mod.ts`);
      }
    }
  }
  return found;
}

/** Imports leaving their layer the wrong way, and bare specifiers that are neither built-ins nor allowed. */
function directionViolations(graph: Graph): string[] {
  const found: string[] = [];
  for (const [file, edges] of graph) {
    const layer = layerOf(file);
    for (const { spec, dynamic } of edges) {
      const to = target(file, spec);
      if (to === undefined) {
        if (spec.startsWith("node:") || (dynamic && RUNTIME_ONLY.has(spec))) continue;
        found.push(
          `${file} imports ${spec}: only node: built-ins${dynamic ? "" : " (or a dynamic runtime-only module)"}`,
        );
      } else if (layer === "resp/" && !to.startsWith("resp/")) {
        found.push(`${file} imports ${spec}: resp/ imports nothing outside resp/`);
      } else if (layer === "strategies/" && layerOf(to) === undefined) {
        found.push(`${file} imports ${spec}: strategies/ imports only strategies/ and resp/`);
      }
    }
  }
  return found;
}

/** `_` files inside a folder, and `_` files imported from another directory. */
function underscoreViolations(graph: Graph): string[] {
  const found: string[] = [];
  const isPrivate = (file: string) => file.slice(file.lastIndexOf("/") + 1).startsWith("_");
  for (const [file, edges] of graph) {
    if (isPrivate(file) && foldersOf(file).length > 0) {
      found.push(`${file}: inside a folder its mod.ts is the boundary, so no _ name`);
    }
    for (const { spec } of edges) {
      const to = target(file, spec);
      if (to !== undefined && isPrivate(to) && dirname(to) !== dirname(file)) {
        found.push(`${file} imports ${spec}: a _ file is for its own directory only`);
      }
    }
  }
  return found;
}

/** `mod.ts` files holding anything but re-exports. */
function modViolations(files: Map<string, string>): string[] {
  const found: string[] = [];
  for (const [file, text] of files) {
    if (!file.endsWith("mod.ts")) continue;
    const rest = code(text).replace(/^\s*export\s+(?:type\s+)?(?:\*|\{[^}]*\})\s+from\s+"[^"]+";/gm, "").trim();
    if (rest !== "") found.push(`${file} holds more than re-exports: ${rest.slice(0, 60)}`);
  }
  return found;
}

/** A cycle as a list of files, or undefined. */
function findCycle(graph: Graph): string[] | undefined {
  const state = new Map<string, "open" | "done">();
  const path: string[] = [];
  const visit = (file: string): string[] | undefined => {
    if (state.get(file) === "done") return undefined;
    if (state.get(file) === "open") return [...path.slice(path.indexOf(file)), file];
    state.set(file, "open");
    path.push(file);
    for (const { spec } of graph.get(file) ?? []) {
      const to = target(file, spec);
      if (to === undefined || !graph.has(to)) continue;
      const found = visit(to);
      if (found) return found;
    }
    path.pop();
    state.set(file, "done");
    return undefined;
  };
  for (const file of graph.keys()) {
    const found = visit(file);
    if (found) return found;
  }
  return undefined;
}

/**
 * Folders ARCHITECTURE.md names (a backticked `resp/x/` or `strategies/x/`)
 * that do not exist, and source folders it does not name. A folder on a
 * line saying "(coming" is a room not built yet and may be missing.
 */
function architectureViolations(doc: string, folders: readonly string[], exists: (dir: string) => boolean): string[] {
  const found: string[] = [];
  const named = new Set<string>();
  for (const line of doc.split("\n")) {
    for (const m of line.matchAll(/`((?:resp|strategies)\/(?:[a-z0-9_]+\/)+)`/g)) {
      named.add(m[1]!);
      if (!exists(m[1]!) && !line.includes("(coming")) found.push(`ARCHITECTURE.md names ${m[1]}, which is missing`);
    }
  }
  for (const folder of folders) {
    if (!named.has(folder)) found.push(`${folder} is not named in ARCHITECTURE.md`);
  }
  return found;
}

/** Files ARCHITECTURE.md names by their whole path (a backticked `resp/...ts`, `strategies/...ts`, `test/...ts`) that do not exist. */
function missingFiles(doc: string, exists: (file: string) => boolean): string[] {
  const found: string[] = [];
  for (const m of doc.matchAll(/`((?:resp|strategies|test|bench|lab)\/[\w/]+\.ts)`/g)) {
    if (!exists(m[1]!) && !found.includes(`ARCHITECTURE.md names ${m[1]}, which is missing`)) {
      found.push(`ARCHITECTURE.md names ${m[1]}, which is missing`);
    }
  }
  return found;
}

/** Source and test files whose name is not snake_case (lower case, digits and `_`; a `.test` suffix allowed). */
function caseViolations(files: readonly string[]): string[] {
  return files.filter((file) =>
    !/^_?[a-z0-9]+(?:_[a-z0-9]+)*(?:\.test)?\.(?:ts|mjs|js)$/.test(file.slice(file.lastIndexOf("/") + 1))
  )
    .map((file) => `${file}: not snake_case`);
}

const layout = suite("layout: resp/ and strategies/");
const graph = readGraph();

layout("reads the tree", () => {
  assert.ok(graph.size > 80, `read ${graph.size} files`);
  assert.ok(graph.has("resp/cluster/mod.ts") && graph.has("strategies/pipeline/mod.ts"));
});

layout("outside a folder, code imports only its mod.ts", () => {
  assert.equal(boundaryViolations(graph), []);
});

layout("the boundary check finds an import reaching inside a folder", () => {
  const made: Graph = new Map([
    ["resp/client.ts", [{ spec: "./connection/command.ts", dynamic: false }]],
    ["resp/cluster/nodes.ts", [{ spec: "./client.ts", dynamic: false }, { spec: "../decode/mod.ts", dynamic: false }]],
    ["strategies/lease.ts", [{ spec: "./pipeline/scripts.ts", dynamic: false }]],
  ]);
  assert.equal(boundaryViolations(made), [
    "resp/client.ts imports ./connection/command.ts: outside resp/connection/, import resp/connection/mod.ts",
    "strategies/lease.ts imports ./pipeline/scripts.ts: outside strategies/pipeline/, import strategies/pipeline/mod.ts",
  ]);
});

layout("every mod.ts only re-exports", () => {
  const texts = new Map([...graph.keys()].map((f) => [f, readFileSync(join(root, f), "utf8")] as const));
  assert.equal(modViolations(texts), []);
});

layout("the mod.ts check finds code in a mod.ts", () => {
  const texts = new Map([
    ["resp/transport/mod.ts", '/** doc */\nexport { a } from "./a.ts";\nexport function open() {}\n'],
    ["resp/decode/mod.ts", '/** doc */\nexport type {\n  A,\n  B,\n} from "./a.ts";\nexport * from "./b.ts";\n'],
  ]);
  assert.equal(modViolations(texts).length, 1);
  assert.match(modViolations(texts)[0]!, /^resp\/transport\/mod.ts holds more than re-exports/);
});

layout("no import cycle, not even a type-only one", () => {
  const cycle = findCycle(graph);
  assert.is(cycle, undefined, `cycle: ${cycle?.join(" -> ")}`);
});

layout("the cycle check finds a cycle when there is one, through a mod.ts too", () => {
  const made: Graph = new Map([
    ["resp/errors.ts", [{ spec: "./shared/mod.ts", dynamic: false }]],
    ["resp/shared/mod.ts", [{ spec: "./tracing.ts", dynamic: false }]],
    ["resp/shared/tracing.ts", [{ spec: "../types.ts", dynamic: false }]],
    ["resp/types.ts", [{ spec: "./errors.ts", dynamic: false }]],
  ]);
  assert.equal(findCycle(made), [
    "resp/errors.ts",
    "resp/shared/mod.ts",
    "resp/shared/tracing.ts",
    "resp/types.ts",
    "resp/errors.ts",
  ]);
});

layout(
  "imports only point down: resp/ stays in resp/, strategies/ in resp/ and strategies/, bare ones are node:",
  () => {
    assert.equal(directionViolations(graph), []);
  },
);

layout("the direction check finds imports that leave their layer and bare modules that are not allowed", () => {
  const made: Graph = new Map([
    ["resp/client.ts", [
      { spec: "../strategies/errors.ts", dynamic: false },
      { spec: "node:net", dynamic: false },
      { spec: "cloudflare:sockets", dynamic: false },
    ]],
    ["resp/transport/cloudflare.ts", [{ spec: "cloudflare:sockets", dynamic: true }]],
    ["strategies/lease.ts", [{ spec: "../mod.ts", dynamic: false }, { spec: "../resp/errors.ts", dynamic: false }]],
    ["strategies/near.ts", [{ spec: "ioredis", dynamic: true }]],
  ]);
  assert.equal(directionViolations(made), [
    "resp/client.ts imports ../strategies/errors.ts: resp/ imports nothing outside resp/",
    "resp/client.ts imports cloudflare:sockets: only node: built-ins (or a dynamic runtime-only module)",
    "strategies/lease.ts imports ../mod.ts: strategies/ imports only strategies/ and resp/",
    "strategies/near.ts imports ioredis: only node: built-ins",
  ]);
});

layout("a _ file lives at the top of a layer and only its own directory imports it", () => {
  assert.equal(underscoreViolations(graph), []);
});

layout("the _ check finds a _ file in a folder and one imported from another directory", () => {
  const made: Graph = new Map([
    ["resp/cluster/_map.ts", []],
    ["strategies/lease.ts", [{ spec: "./_lease_scripts.ts", dynamic: false }]],
    ["strategies/pipeline/publish.ts", [{ spec: "../_lease_scripts.ts", dynamic: false }]],
  ]);
  assert.equal(underscoreViolations(made), [
    "resp/cluster/_map.ts: inside a folder its mod.ts is the boundary, so no _ name",
    "strategies/pipeline/publish.ts imports ../_lease_scripts.ts: a _ file is for its own directory only",
  ]);
});

layout("ARCHITECTURE.md names every source folder, and each folder it names exists", () => {
  const doc = readFileSync(join(root, "ARCHITECTURE.md"), "utf8");
  const folders = [...new Set([...graph.keys()].flatMap(foldersOf))].sort();
  assert.ok(folders.includes("resp/cluster/"), "found the folders");
  assert.equal(architectureViolations(doc, folders, (dir) => existsSync(join(root, dir))), []);
});

layout("the ARCHITECTURE.md check finds a missing folder and an unnamed one", () => {
  const doc = "- `resp/cluster/`: the cluster client.\n- `resp/gone/`: moved away.\n" +
    "- `resp/sentinel/` (coming): the Sentinel client.\n";
  const exists = (dir: string) => dir === "resp/cluster/" || dir === "resp/decode/";
  assert.equal(architectureViolations(doc, ["resp/cluster/", "resp/decode/"], exists), [
    "ARCHITECTURE.md names resp/gone/, which is missing",
    "resp/decode/ is not named in ARCHITECTURE.md",
  ]);
});

layout("every file ARCHITECTURE.md names by its path exists", () => {
  const doc = readFileSync(join(root, "ARCHITECTURE.md"), "utf8");
  assert.ok(doc.includes("`strategies/pipeline/calls/get.ts`"), "the map names the hit's file");
  assert.equal(missingFiles(doc, (file) => existsSync(join(root, file))), []);
});

layout("the file check finds a file the map names that is gone", () => {
  const doc = "`strategies/pipeline/core.ts` holds it; `resp/client.ts` sends; `client.ts` alone is not a path";
  assert.equal(missingFiles(doc, (file) => file === "resp/client.ts"), [
    "ARCHITECTURE.md names strategies/pipeline/core.ts, which is missing",
  ]);
});

layout("the case check finds kebab and camel case", () => {
  assert.equal(
    caseViolations([
      "test/faults/eviction-order.test.ts",
      "lab/soakRun.ts",
      "resp/slot_map.ts",
      "test/x/_model_ops.ts",
    ]),
    [
      "test/faults/eviction-order.test.ts: not snake_case",
      "lab/soakRun.ts: not snake_case",
    ],
  );
});

/** Every .ts and .mjs file under `dir`, skipping dependencies and generated output. */
function walkAll(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(join(root, dir)).sort()) {
    if (name === "node_modules" || name.startsWith(".") || name === "out" || name === "results") continue;
    const path = `${dir}${name}`;
    if (statSync(join(root, path)).isDirectory()) walkAll(`${path}/`, out);
    else if (/\.(?:ts|mjs)$/.test(name) && !name.endsWith(".d.ts")) out.push(path);
  }
  return out;
}

layout("every source and test file is named in snake_case", () => {
  const files = ["resp/", "strategies/", "test/", "bench/", "lab/"].flatMap((dir) => walkAll(dir));
  assert.ok(files.length > 200, `read ${files.length} files`);
  assert.equal(caseViolations(files), []);
});

layout.run();
