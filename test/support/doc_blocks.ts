/**
 * The code blocks the documentation shows, as the examples runner
 * (`examples.ts`) runs them: the ```ts blocks of README.md and docs/*.md,
 * and the code of the published modules' JSDoc `@example`s. Pure text
 * work, no I/O, so the rules below are tested on their own
 * (test/doc_blocks.test.ts).
 *
 * Two things a page says in prose bind the runner:
 *
 * - **Deno's permission flags.** A block runs under Deno with the flags of
 *   the nearest `deno run <flags> <file>.ts` printed above it in its page
 *   (inline code, a sh block or a comment in the block itself), and with no
 *   other: the flags a reader copies are the flags CI tests. A page whose
 *   block has no such command above it fails the run.
 * - **A block that cannot run somewhere says why**, in a comment the runner
 *   reads: `// Not run on Bun: <reason>` (or `on Deno`, `on Node`, `on Bun
 *   and Deno`). A marker without a reason is refused.
 *
 * @module
 */

export const RUNTIMES = ["node", "bun", "deno"] as const;
export type Runtime = (typeof RUNTIMES)[number];

/** One code block to run. */
export interface Snippet {
  /** `README.md:23` or `resp/client.ts:41`: the line of its opening fence. */
  readonly where: string;
  readonly code: string;
  /** From a markdown page (README.md, docs/): imports `"herdless"`; else a JSDoc example (`"@herdless/herdless"`). */
  readonly fromDocs: boolean;
  /** The flags `deno run` gets for it, as its page prints them; undefined when the page prints none above it. */
  readonly denoFlags: readonly string[] | undefined;
  /** Runtimes it is not run on, each with the reason its comment gives. */
  readonly notOn: ReadonlyMap<Runtime, string>;
}

/** Flags JSDoc examples run with under Deno: they reach Redis and read its URL, nothing else. */
export const JSDOC_DENO_FLAGS: readonly string[] = ["--allow-net", "--allow-env"];

const DENO_RUN = /\bdeno run((?:\s+-[-\w]+(?:=[^\s`'"]+)?)*)\s+[\w./-]+\.(?:ts|mts|js|mjs)\b/;

/** The flags of a `deno run ... file.ts` command in one line, or undefined when the line has none. */
export function denoRunFlags(line: string): string[] | undefined {
  const m = DENO_RUN.exec(line);
  if (!m) return undefined;
  return m[1]!.trim() === "" ? [] : m[1]!.trim().split(/\s+/);
}

const NOT_RUN = /^\s*\/\/\s*Not run on ([A-Za-z, ]+?)\s*:\s*(.*)$/i;

/**
 * The runtimes a block's `// Not run on X: reason` comments exclude, or a
 * problem (an unknown runtime, a missing reason).
 */
export function notRunOn(code: string): { notOn: Map<Runtime, string>; problem?: string } {
  const notOn = new Map<Runtime, string>();
  for (const line of code.split("\n")) {
    const m = NOT_RUN.exec(line);
    if (!m) continue;
    const reason = m[2]!.trim();
    if (reason === "") return { notOn, problem: `"${line.trim()}" gives no reason` };
    for (const word of m[1]!.split(/\s*(?:,|\band\b)\s*/i).filter(Boolean)) {
      const runtime = word.toLowerCase() as Runtime;
      if (!RUNTIMES.includes(runtime)) return { notOn, problem: `"${line.trim()}" names no runtime herdless runs on` };
      notOn.set(runtime, reason);
    }
  }
  return { notOn };
}

/** The ```ts blocks of a markdown text, with the Deno flags printed above each, and the lines of its sh blocks. */
export function markdownBlocks(text: string, file: string): { snippets: Snippet[]; shell: string[] } {
  const snippets: Snippet[] = [];
  const shell: string[] = [];
  const lines = text.split("\n");
  let flags: string[] | undefined;
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*$/.exec(lines[i]!);
    if (!open) {
      flags = denoRunFlags(lines[i]!) ?? flags;
      continue;
    }
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]!); i++) body.push(lines[i]!);
    const lang = open[1]!;
    if (lang === "ts" || lang === "typescript") {
      const code = body.join("\n");
      // A command in the block's own comments is for that block alone.
      const own = body.map(denoRunFlags).find((f) => f !== undefined);
      snippets.push({
        where: `${file}:${start + 1}`,
        code,
        fromDocs: true,
        denoFlags: own ?? flags,
        notOn: notRunOn(code).notOn,
      });
    } else {
      if (lang === "sh" || lang === "bash" || lang === "shell") shell.push(...body);
      for (const line of body) flags = denoRunFlags(line) ?? flags;
    }
  }
  return { snippets, shell };
}

/**
 * The code blocks inside the JSDoc comments of a source file: those tagged
 * ts, and untagged ones under an `@example` (an untagged block elsewhere is
 * prose, such as a format diagram).
 */
export function jsdocBlocks(text: string, file: string): Snippet[] {
  const out: Snippet[] = [];
  const lines = text.split("\n");
  let inExample = false;
  for (let i = 0; i < lines.length; i++) {
    if (/^\s*\/\*\*/.test(lines[i]!)) inExample = false;
    const tag = /^\s*\*\s*@(\w+)/.exec(lines[i]!);
    if (tag) inExample = tag[1] === "example";
    const open = /^\s*\*\s?```(\w*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^\s*\*\s?```\s*$/.test(lines[i]!); i++) {
      body.push(lines[i]!.replace(/^\s*\* ?/, ""));
    }
    const lang = open[1]!;
    if ((lang === "" && inExample) || lang === "ts" || lang === "typescript") {
      const code = body.join("\n");
      out.push({
        where: `${file}:${start + 1}`,
        code,
        fromDocs: false,
        denoFlags: JSDOC_DENO_FLAGS,
        notOn: notRunOn(code).notOn,
      });
    }
  }
  return out;
}

/** Literal tokens a `console.log(...) // comment` promises to print, per line; comments in prose are skipped. */
export function expectedOutput(code: string): string[] {
  const literal = String.raw`"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?n?|true|false|null|undefined`;
  const sequence = new RegExp(String.raw`^(?:\[\s*)?(?:${literal})(?:\s*,?\s*\]?\s*,?\s*\[?\s*(?:${literal}))*\s*\]?$`);
  const out: string[] = [];
  for (const line of code.split("\n")) {
    const m = /^\s*(?:await\s+)?console\.log\(.*\);?\s*\/\/\s*(.+?)\s*$/.exec(line);
    if (!m) continue;
    const comment = m[1]!.replace(/\s*\([^)]*\)$/, "");
    if (!sequence.test(comment)) continue;
    for (const token of comment.match(new RegExp(literal, "g")) ?? []) {
      out.push(token.startsWith('"') ? JSON.parse(token) as string : token.replace(/n$/, ""));
    }
  }
  return out;
}

/**
 * Why a block must not run, or undefined. Its imports must be the published
 * names (never a relative path), and it may name no IPv4 address outside the
 * loopback range: examples run here must reach nothing but the servers the
 * runner starts, so addresses come from env vars (`REDIS_URL`,
 * `REDIS_CLUSTER_SEEDS`) with loopback defaults. A page's block needs the
 * Deno flags printed above it, and a `Not run on` comment its reason.
 */
export function blockProblem(s: Snippet): string | undefined {
  const outside = [...s.code.matchAll(/\b(\d{1,3})\.\d{1,3}\.\d{1,3}\.\d{1,3}\b/g)].find((m) => m[1] !== "127");
  if (outside) return `names ${outside[0]}: examples may name loopback addresses only (read others from env vars)`;
  const specs = [...s.code.matchAll(/\bfrom\s+["']([^"']+)["']|\bimport\s*\(\s*["']([^"']+)["']\s*\)/g)]
    .map((m) => m[1] ?? m[2]!);
  const relativeSpec = specs.find((x) => x.startsWith("."));
  if (relativeSpec !== undefined) return `imports the relative path "${relativeSpec}": use the published name`;
  const wrong = s.fromDocs
    ? specs.find((x) => x === "@herdless/herdless" || x.startsWith("@herdless/herdless/"))
    : specs.find((x) => x === "herdless" || x.startsWith("herdless/"));
  if (wrong !== undefined) {
    return s.fromDocs
      ? `imports "${wrong}": documentation blocks import "herdless" (README's Install tells JSR users how to map it)`
      : `imports "${wrong}": JSDoc examples import "@herdless/herdless", as jsr.io shows them`;
  }
  const marker = notRunOn(s.code).problem;
  if (marker !== undefined) return marker;
  if (s.denoFlags === undefined && !s.notOn.has("deno")) {
    return "no `deno run <flags> <file>.ts` is printed above it in its page: a Deno reader cannot know its permissions";
  }
  return undefined;
}
