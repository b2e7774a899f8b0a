/**
 * Runs a Worker under the real workerd runtime (the binary the `miniflare`
 * package ships, pinned in this folder's package.json), with the
 * `nodejs_compat` flag, importing the BUILT package (`dist/`, as published
 * to npm) under the name `herdless`. The test process only drives it: the
 * code under test runs in workerd's isolate.
 *
 * @module
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import process from "node:process";

const root = resolve(
  import.meta.dirname ?? new URL(".", import.meta.url).pathname,
  "../..",
);
const dist = join(root, "dist");

/** True when this process can drive workerd (miniflare is a Node package; Bun and Deno runs skip these suites). */
export const canDrive = (globalThis as { Bun?: unknown }).Bun === undefined &&
  (globalThis as { Deno?: unknown }).Deno === undefined;

/** What the tests use of a `Miniflare` instance. */
interface MiniflareLike {
  dispatchFetch(
    url: string,
    init?: Record<string, unknown>,
  ): Promise<{ status: number; text(): Promise<string> }>;
  dispose(): Promise<void>;
}

interface Module {
  type: "ESModule";
  path: string;
  contents: string;
}

function newest(dir: string): number {
  let latest = 0;
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const stat = statSync(path);
    latest = Math.max(latest, stat.isDirectory() ? newest(path) : stat.mtimeMs);
  }
  return latest;
}

/** `npm run build`, unless dist/ is newer than every source file. */
function ensureBuilt(): void {
  let built = 0;
  try {
    built = statSync(join(dist, "mod.js")).mtimeMs;
  } catch {
    // Not built yet.
  }
  const sources = Math.max(
    newest(join(root, "resp")),
    newest(join(root, "strategies")),
    statSync(join(root, "mod.ts")).mtimeMs,
  );
  if (built > sources) return;
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  const run = spawnSync(npm, ["run", "build"], { cwd: root, stdio: "inherit" });
  if (run.status !== 0) {
    throw new Error(`npm run build failed (exit ${run.status ?? run.signal})`);
  }
}

let modules: Module[] | undefined;

/** The built package as workerd modules under `node_modules/herdless/`, plus `herdless` naming its entry point. */
function packageModules(): Module[] {
  if (modules !== undefined) return modules;
  ensureBuilt();
  const out: Module[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith(".js")) {
        out.push({
          type: "ESModule",
          path: `/w/node_modules/herdless/dist/${relative(dist, path)}`,
          contents: readFileSync(path, "utf8"),
        });
      }
    }
  };
  walk(dist);
  out.push({
    type: "ESModule",
    path: "/w/herdless",
    contents: 'export * from "./node_modules/herdless/dist/mod.js";\n',
  });
  out.push({
    type: "ESModule",
    path: "/w/herdless/resp",
    contents: 'export * from "../node_modules/herdless/dist/resp/mod.js";\n',
  });
  modules = out;
  return out;
}

/** Every module file of the built package, as the Worker's import specifiers. */
export function publishedModules(): string[] {
  return packageModules().filter((m) => m.path.startsWith("/w/node_modules/"))
    .map((m) => `.${m.path.slice(2)}`);
}

/** A response of the Worker: its status and its JSON body. */
export interface WorkerResponse {
  readonly status: number;
  // deno-lint-ignore no-explicit-any
  readonly body: any;
}

/** One workerd process running one Worker. */
export interface Workerd {
  /** Send a request to the Worker (`path` with its query). */
  fetch(path: string): Promise<WorkerResponse>;
  /** Stop the workerd process. */
  dispose(): Promise<void>;
}

/** Options for {@linkcode startWorkerd}. */
export interface StartWorkerdOptions {
  /**
   * The Worker's source (an ES module importing `herdless`); imports of
   * every module of the package go before it, and `globalThis.herdlessModules`
   * counts them. @default {the code of ./_worker.js}
   */
  readonly worker?: string;
  /** Its `env` (strings). */
  readonly bindings: Record<string, string>;
}

/** Start a workerd process running a Worker. */
export async function startWorkerd(
  options: StartWorkerdOptions,
): Promise<Workerd> {
  const specifier = "miniflare";
  const { Miniflare } = (await import(specifier)) as {
    Miniflare: new (options: Record<string, unknown>) => MiniflareLike;
  };
  // The Worker also imports every module of the package, so that each one's
  // module scope runs under workerd's global-scope rules in every suite.
  const specifiers = publishedModules();
  const imports = specifiers.map((s, i) => `import * as m${i} from "${s}";\n`)
    .join("");
  const count = `globalThis.herdlessModules = [${specifiers.map((_, i) => `m${i}`).join(", ")}].length;\n`;
  const source = options.worker ??
    readFileSync(join(root, "test", "workerd", "_worker.js"), "utf8");
  const worker = imports + count + source;
  const mf = new Miniflare({
    modules: [
      { type: "ESModule", path: "/w/worker.js", contents: worker },
      ...packageModules(),
    ],
    modulesRoot: "/w",
    compatibilityDate: "2025-09-01",
    compatibilityFlags: ["nodejs_compat"],
    bindings: options.bindings,
  });
  return {
    async fetch(path) {
      const response = await mf.dispatchFetch(`http://worker${path}`);
      const text = await response.text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // Not JSON (workerd's own error page): kept as text for the failure message.
      }
      return { status: response.status, body };
    },
    dispose: () => mf.dispose(),
  };
}

/** A Worker served over HTTP by workerd, as `wrangler dev` would. */
export interface ServedWorker {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  dispose(): Promise<void>;
}

/**
 * Serve a Worker written in TypeScript (type-stripped by the TypeScript
 * compiler, importing `herdless` from the built package) over HTTP under
 * workerd, with the compatibility date, flags and `[vars]` of a wrangler.toml.
 */
export async function serveWorker(
  file: string,
  wranglerToml: string,
  options: { port: number; bindings: Record<string, string> },
): Promise<ServedWorker> {
  const specifier = "typescript";
  const ts = (await import(specifier)) as {
    default: {
      transpileModule(
        source: string,
        options: Record<string, unknown>,
      ): { outputText: string };
    };
  };
  const source = readFileSync(file, "utf8");
  const worker = ts.default.transpileModule(source, {
    compilerOptions: { target: 9, /* ES2022 */ module: 99 /* ESNext */ },
  })
    .outputText;
  const toml = readFileSync(wranglerToml, "utf8");
  const date = /^compatibility_date\s*=\s*"([^"]+)"/m.exec(toml)?.[1];
  const flags = [
    .../^compatibility_flags\s*=\s*\[([^\]]*)\]/m.exec(toml)?.[1]?.matchAll(
      /"([^"]+)"/g,
    ) ?? [],
  ].map((m) => m[1]!);
  const vars: Record<string, string> = {};
  const section = /^\[vars\]\s*$([\s\S]*?)(?=^\[|(?![\s\S]))/m.exec(toml)?.[1] ?? "";
  for (const m of section.matchAll(/^(\w+)\s*=\s*"([^"]*)"/gm)) {
    vars[m[1]!] = m[2]!;
  }
  const miniflare = "miniflare";
  const { Miniflare } = (await import(miniflare)) as {
    Miniflare: new (
      options: Record<string, unknown>,
    ) => MiniflareLike & { ready: Promise<URL> };
  };
  const mf = new Miniflare({
    modules: [
      { type: "ESModule", path: "/w/worker.js", contents: worker },
      ...packageModules(),
    ],
    modulesRoot: "/w",
    compatibilityDate: date,
    compatibilityFlags: flags,
    bindings: { ...vars, ...options.bindings },
    host: "127.0.0.1",
    port: options.port,
  });
  const url = await mf.ready;
  return { url: url.origin, dispose: () => mf.dispose() };
}
