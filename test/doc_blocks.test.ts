/**
 * The documentation's shape and the rules by which its examples run
 * (test/support/doc_blocks.ts): the Deno flags a page prints are the flags
 * its blocks run with, a block that cannot run somewhere says why, the
 * README stays a front door, every docs/ page opens with a short summary,
 * and every link between the pages leads somewhere.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import {
  blockProblem,
  denoRunFlags,
  JSDOC_DENO_FLAGS,
  jsdocBlocks,
  markdownBlocks,
  notRunOn,
} from "./support/doc_blocks.ts";

const root = resolve(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "..");
const read = (path: string) => readFileSync(join(root, path), "utf8");
const docsPages = readdirSync(join(root, "docs")).filter((n) => n.endsWith(".md")).sort().map((n) => `docs/${n}`);
const fence = "```";

const Rules = suite("doc_blocks: how a block runs");

Rules("denoRunFlags() reads the flags of a printed deno run command, and nothing else", () => {
  assert.equal(denoRunFlags("run it: `deno run --allow-net --allow-env=REDIS_URL main.ts`."), [
    "--allow-net",
    "--allow-env=REDIS_URL",
  ]);
  assert.equal(denoRunFlags("deno run main.ts"), []);
  assert.equal(denoRunFlags("// Deno: deno run --allow-net --allow-env main.ts (ioredis reads it all)"), [
    "--allow-net",
    "--allow-env",
  ]);
  assert.is(denoRunFlags("deno add jsr:@herdless/herdless"), undefined);
  assert.is(denoRunFlags("npm run example:deno"), undefined);
});

Rules("a block runs with the nearest command printed above it; its own comment is for itself alone", () => {
  const page = [
    "# Page",
    "",
    "Run with `deno run --allow-net --allow-env=REDIS_URL main.ts`.",
    "",
    `${fence}ts`,
    "console.log(1);",
    fence,
    "",
    `${fence}ts`,
    "// deno run --allow-net --allow-env main.ts",
    "console.log(2);",
    fence,
    "",
    `${fence}sh`,
    "deno run --allow-net --allow-env=SENTINEL_URLS main.ts",
    fence,
    "",
    `${fence}ts`,
    "console.log(3);",
    fence,
  ].join("\n");
  const { snippets, shell } = markdownBlocks(page, "page.md");
  assert.equal(snippets.map((s) => s.denoFlags), [
    ["--allow-net", "--allow-env=REDIS_URL"],
    ["--allow-net", "--allow-env"],
    ["--allow-net", "--allow-env=SENTINEL_URLS"],
  ]);
  assert.equal(snippets.map((s) => s.where), ["page.md:5", "page.md:9", "page.md:18"]);
  assert.equal(shell, ["deno run --allow-net --allow-env=SENTINEL_URLS main.ts"]);
});

Rules("a page's block with no deno run command above it is refused", () => {
  const [block] = markdownBlocks(`# Page\n\n${fence}ts\nconsole.log(1);\n${fence}\n`, "page.md").snippets;
  assert.is(block!.denoFlags, undefined);
  assert.match(blockProblem(block!) ?? "", /no `deno run <flags> <file>.ts` is printed above it/);
});

Rules("JSDoc examples run under Deno with network and environment access only", () => {
  const [block] = jsdocBlocks(
    ["/**", " * @example Title", " * ```ts", ' * import { connect } from "@herdless/herdless";', " * ```", " */"]
      .join("\n"),
    "x.ts",
  );
  assert.equal(block!.denoFlags, JSDOC_DENO_FLAGS);
  assert.is(blockProblem(block!), undefined);
});

Rules("a 'Not run on' comment names its runtimes and must give a reason", () => {
  assert.equal([...notRunOn("// Not run on Bun and Deno: needs node:cluster\nx();").notOn], [
    ["bun", "needs node:cluster"],
    ["deno", "needs node:cluster"],
  ]);
  assert.match(notRunOn("// Not run on Deno:\n").problem ?? "", /gives no reason/);
  assert.match(notRunOn("// Not run on Safari: no sockets\n").problem ?? "", /names no runtime/);
  const [block] = markdownBlocks(
    `# Page\n\n${fence}ts\n// Not run on Deno: it uses Bun.serve\nconsole.log(1);\n${fence}\n`,
    "page.md",
  ).snippets;
  assert.is(blockProblem(block!), undefined, "a block Deno skips needs no Deno flags");
  assert.equal(block!.notOn.get("deno"), "it uses Bun.serve");
});

Rules("pages import the npm name, JSDoc examples the JSR name", () => {
  const page = markdownBlocks(
    `# P\n\`deno run main.ts\`\n\n${fence}ts\nimport { connect } from "@herdless/herdless";\n${fence}\n`,
    "p.md",
  ).snippets[0]!;
  assert.match(blockProblem(page) ?? "", /documentation blocks import "herdless"/);
});

Rules.run();

const Pages = suite("the documentation's shape");

Pages("README.md is a front door: at most 350 lines, a table of contents, the strategy table before line 120", () => {
  const lines = read("README.md").split("\n");
  assert.ok(lines.length <= 350, `README.md has ${lines.length} lines`);
  const contents = lines.indexOf("## Contents");
  assert.ok(contents > 0 && contents < lines.indexOf("## Install"), "## Contents comes before ## Install");
  for (const line of lines.filter((l) => /^## /.test(l) && l !== "## Contents" && l !== "## License")) {
    const anchor = slug(line.slice(3));
    assert.ok(lines.some((l) => l.includes(`](#${anchor})`)), `the table of contents links ${line}`);
  }
  const table = lines.findIndex((l) => l.startsWith("| situation"));
  assert.ok(table > 0 && table + 1 < 120, `the strategy table starts on line ${table + 1}`);
});

Pages("every docs/ page opens with a summary of at most five lines, then a heading or its example", () => {
  assert.ok(docsPages.length >= 10, `docs/ holds ${docsPages.length} pages`);
  for (const page of docsPages) {
    const lines = read(page).split("\n");
    assert.match(lines[0]!, /^# \S/, `${page} starts with its title`);
    const end = lines.findIndex((l, i) => i > 0 && (/^#/.test(l) || l.startsWith(fence)));
    const summary = lines.slice(1, end).filter((l) => l.trim() !== "");
    assert.ok(summary.length >= 1 && summary.length <= 5, `${page}: a summary of ${summary.length} lines`);
    assert.ok(markdownBlocks(read(page), page).snippets.length > 0, `${page} has a runnable example`);
  }
});

Pages("every block of README.md and docs/ may run: published imports, Deno flags printed above it", () => {
  for (const page of ["README.md", ...docsPages]) {
    for (const block of markdownBlocks(read(page), page).snippets) {
      assert.is(blockProblem(block), undefined, block.where);
    }
  }
});

Pages("every link between the pages leads to a file, and every anchor to a heading", () => {
  const pages = ["README.md", "CONTRIBUTING.md", "ARCHITECTURE.md", "lab/README.md", "lab/chaos/README.md"]
    .concat("bench/README.md", docsPages);
  const broken: string[] = [];
  for (const page of pages) {
    const text = read(page).replace(/^```[\s\S]*?^```/gm, "");
    for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      let target = m[1]!;
      const own =
        /^https:\/\/(?:github\.com\/herdless\/herdless\/(?:blob|tree)\/main|raw\.githubusercontent\.com\/herdless\/herdless\/main)\/(.*)$/
          .exec(target);
      if (own) target = `/${own[1]}`;
      else if (/^[a-z]+:/.test(target)) continue;
      const [path, anchor] = target.split("#") as [string, string | undefined];
      const file = path === "" ? page : path.startsWith("/") ? path.slice(1) : join(dirname(page), path);
      if (!existsSync(join(root, file))) {
        broken.push(`${page}: ${m[1]} (no ${file})`);
        continue;
      }
      if (anchor === undefined || !file.endsWith(".md") || statSync(join(root, file)).isDirectory()) continue;
      if (!headings(read(file)).has(anchor)) broken.push(`${page}: ${m[1]} (no heading #${anchor} in ${file})`);
    }
  }
  assert.equal(broken, []);
});

Pages.run();

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-");
}

function headings(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of text.replace(/^```[\s\S]*?^```/gm, "").matchAll(/^#{1,6} (.+)$/gm)) {
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}
