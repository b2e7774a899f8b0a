/**
 * Every key a herdless Lua script touches is one it declares in KEYS. Redis
 * and Valkey run a script that reaches other keys, but Dragonfly refuses it
 * unless started with `--default_lua_flags=allow-undeclared-keys`, and a
 * cluster can route a script only by its declared keys. The scripts are read
 * from the source files that hold them, so a new script is checked too.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));

/** Where each command a script may call takes keys: every argument, the first, or none. */
const KEY_ARGS: Record<string, "all" | "first" | "none"> = {
  GET: "first",
  SET: "first",
  SETRANGE: "first",
  PEXPIRE: "first",
  DEL: "all",
  TIME: "none",
  // Its first argument is a channel; the message may name a key, as a value.
  PUBLISH: "none",
};

/** The template strings a file declares (`const NAME = \`...\``): pieces its scripts are built from. */
function pieces(text: string): Map<string, string> {
  return new Map([...text.matchAll(/const ([A-Z_]+) = `([^`]*)`/g)].map((m) => [m[1]!, m[2]!]));
}

/**
 * `lua` with each `${NAME}` of a piece of its file written out (pieces may
 * hold pieces); any other `${...}` is a number the file computes, left as 0.
 */
function expand(lua: string, from: Map<string, string>, depth = 0): string {
  if (depth > 4) throw new Error("script pieces nest too deep");
  return lua.replace(/\$\{([^}]*)\}/g, (_, name: string) => {
    const piece = from.get(name.trim());
    return piece === undefined ? "0" : expand(piece, from, depth + 1);
  });
}

/** The Lua of every `new Script(...)` in the published source, with its file, pieces written out. */
function scripts(): { file: string; lua: string }[] {
  const found: { file: string; lua: string }[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith(".ts")) {
        const text = readFileSync(path, "utf8");
        for (const m of text.matchAll(/new Script\(\s*(`[^`]*`|"[^"]*"|'[^']*')/g)) {
          found.push({ file: path.slice(root.length), lua: expand(m[1]!.slice(1, -1), pieces(text)) });
        }
      }
    }
  };
  walk(join(root, "strategies"));
  walk(join(root, "resp"));
  // resp/script.ts' own JSDoc examples are not herdless' scripts.
  return found.filter((s) => s.file !== "resp/script.ts");
}

/** The calls of `lua`: command name and argument expressions, as written. */
function calls(lua: string): { command: string; args: string[] }[] {
  return [...lua.matchAll(/redis\.p?call\(([^)]*)\)/g)].map((m) => {
    const [name, ...args] = m[1]!.split(",").map((a) => a.trim());
    return { command: name!.replace(/^['"]|['"]$/g, "").toUpperCase(), args };
  });
}

const Keys = suite("Lua scripts declare their keys");

Keys(
  "the publication and republication, expire(), the lease's release and renewal, and the clock's TIME are all found",
  () => {
    // Told apart by what they call, not by the files that hold them (files move).
    const found = scripts().map(({ lua }) => [...new Set(calls(lua).map((c) => c.command))].sort().join(" ")).sort();
    assert.equal(found, [
      "DEL GET PUBLISH",
      "DEL GET PUBLISH SET SETRANGE TIME",
      "DEL GET PUBLISH SET SETRANGE TIME",
      "DEL GET PUBLISH SET TIME",
      "GET PEXPIRE",
      "TIME",
    ]);
  },
);

Keys("every key argument of every call is KEYS[n]: no script reaches a key it did not declare", () => {
  for (const { file, lua } of scripts()) {
    for (const { command, args } of calls(lua)) {
      const where = KEY_ARGS[command];
      assert.ok(where !== undefined, `${file} calls ${command}: add where it takes keys to KEY_ARGS`);
      const keyArgs = where === "all" ? args : where === "first" ? args.slice(0, 1) : [];
      for (const arg of keyArgs) {
        assert.match(arg, /^KEYS\[\d+\]$/, `${file}: ${command} is given the key ${arg}, not one of KEYS`);
      }
    }
  }
});

Keys.run();
