/**
 * The names a module exports, for tests that pin a public entry point:
 * values as the runtime sees them, types as its `export` statements say
 * (following `export *`), both sorted.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";

/** Type-only names `file` re-exports: `export type { A }`, `export { type A }`, and those of `export *`. */
function typeNames(file: string): string[] {
  const text = readFileSync(file, "utf8").replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
  const names: string[] = [];
  for (const m of text.matchAll(/^export\s+(type\s+)?\{([^}]*)\}\s*from\s*"[^"]+"/gm)) {
    for (const item of m[2]!.split(",").map((s) => s.trim()).filter(Boolean)) {
      if (m[1] !== undefined) names.push(item);
      else if (item.startsWith("type ")) names.push(item.slice("type ".length).trim());
    }
  }
  for (const m of text.matchAll(/^export\s+\*\s+from\s+"([^"]+)"/gm)) {
    names.push(...typeNames(join(dirname(file), m[1]!)));
  }
  return names;
}

/** `{ values, types }` of the module at `file` (an absolute path). */
export async function exportsOf(file: string): Promise<{ values: string[]; types: string[] }> {
  const mod = await import(pathToFileURL(file).href) as Record<string, unknown>;
  return { values: Object.keys(mod).sort(), types: [...new Set(typeNames(file))].sort() };
}
