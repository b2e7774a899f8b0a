/**
 * The shape of resp/ that DESIGN.md promises and nothing else checks: its
 * imports form a tree (no cycle, not even through `import type`), and none
 * points up into strategies/ or the package root.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

const dir = resolve(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "../../resp");

/** Every relative import or re-export specifier of each resp/ file, `import type` included. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const name of readdirSync(dir).filter((n) => n.endsWith(".ts")).sort()) {
    const text = readFileSync(join(dir, name), "utf8")
      .replace(/\/\*[\s\S]*?\*\//g, "") // JSDoc examples import the package by name; they are not edges
      .replace(/^\s*\/\/.*$/gm, "");
    const specs = [...text.matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s+"([^"]+)"/gm)].map((m) => m[1]!);
    graph.set(name, specs);
  }
  return graph;
}

/** A cycle as a list of files, or undefined. */
function findCycle(graph: Map<string, string[]>): string[] | undefined {
  const state = new Map<string, "open" | "done">();
  const path: string[] = [];
  const visit = (file: string): string[] | undefined => {
    if (state.get(file) === "done") return undefined;
    if (state.get(file) === "open") return [...path.slice(path.indexOf(file)), file];
    state.set(file, "open");
    path.push(file);
    for (const spec of graph.get(file) ?? []) {
      if (!spec.startsWith("./")) continue;
      const found = visit(spec.slice(2));
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

const layout = suite("resp/ layout");

layout("no import cycle, not even a type-only one", () => {
  const graph = importGraph();
  assert.ok(graph.size > 10, "read resp/");
  const cycle = findCycle(graph);
  assert.is(cycle, undefined, `cycle: ${cycle?.join(" -> ")}`);
});

layout("the cycle check finds a cycle when there is one", () => {
  const graph = new Map([["a.ts", ["./b.ts"]], ["b.ts", ["./c.ts"]], ["c.ts", ["./a.ts"]]]);
  assert.equal(findCycle(graph), ["a.ts", "b.ts", "c.ts", "a.ts"]);
});

layout("imports only point down: relative imports stay inside resp/, the rest are node: built-ins", () => {
  for (const [file, specs] of importGraph()) {
    for (const spec of specs) {
      assert.ok(spec.startsWith("./") || spec.startsWith("node:"), `${file} imports ${spec}`);
      // Down into a folder of resp/ (adapters/) is fine; up and out is not.
      if (spec.startsWith("./")) assert.ok(!spec.includes(".."), `${file} imports ${spec}`);
    }
  }
});

layout.run();
