// No reference a reader cannot follow: this project's issue numbers and commit
// hashes name things in a tracker and a history the reader of a comment, a
// doc page or a test name does not have. A comment states the reason itself.
//
//   node .ci/check-references.mjs [path...]   (default: every file git knows, new ones included)
//
// What it reports, per line: the word issue (or issues, or PR) followed by a
// number, a number after a lone "#", a link into this project's own tracker
// or history, and a word of 7 to 40 hex digits mixing letters and digits (a
// commit hash). Links to other
// projects' public trackers are fine, and so is data: generated charts and
// JSON, and the dated result files under bench/results/ and lab/results/.
import { execFileSync } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import process from "node:process";

const DATA = [
  /(^|\/)package-lock\.json$/,
  /\.(svg|json|lock|png|jpg)$/,
  /^bench\/results\//,
  /^lab\/results\//,
  /^LICENSE$/,
];

const OWN_TRACKER = /github\.com\/herdless\/herdless\/(issues|pull|commit|compare)\b/i;
// "issues 1,000 commands" is a verb and a count, not a reference.
const ISSUE = /\bissues?\s*#?\d+(?!\d|,\d)|(^|[\s([])#\d+\b|\bPR\s*#?\d+/i;
// A commit hash: 7 to 40 hex digits with at least one letter and one digit, a
// word of its own (not inside a decimal such as 2.2250738585072014e-308, a
// file name such as 1-cold-burst or an identifier).
const HASH = /(?<![\w.\-/#$])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w\-])/;

/** The files git knows (new ones included), or those under the paths given. */
function files(args) {
  const out = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "-z"], {
    encoding: "utf8",
  });
  const known = [...new Set(out.split("\0").filter(Boolean))];
  if (args.length === 0) return known;
  const under = (path, arg) => path === arg || path.startsWith(arg.replace(/\/$/, "") + "/");
  return known.filter((path) => args.some((arg) => under(path, arg)));
}

/** The problems of one line, as short phrases. */
export function problems(line) {
  const found = [];
  if (OWN_TRACKER.test(line)) found.push("links to this project's tracker or history");
  // Links elsewhere may carry numbers (another project's issue): judge the text around them.
  const text = line.replace(/https?:\/\/[^\s)>\]"'`]+/g, "");
  const issue = ISSUE.exec(text);
  if (issue) found.push(`cites an issue ("${issue[0].trim()}")`);
  const hash = HASH.exec(text);
  if (hash) found.push(`cites a commit ("${hash[0]}")`);
  return found;
}

const report = [];
for (const path of files(process.argv.slice(2))) {
  if (DATA.some((re) => re.test(path))) continue;
  let text;
  try {
    if (!statSync(path).isFile()) continue;
    text = readFileSync(path, "utf8");
  } catch {
    continue; // deleted in the work tree, or unreadable: nothing to read
  }
  if (text.includes("\0")) continue; // binary
  text.split("\n").forEach((line, i) => {
    for (const p of problems(line)) report.push(`${path}:${i + 1}: ${p}: ${line.trim().slice(0, 160)}`);
  });
}
for (const line of report) console.log(line);
if (report.length > 0) {
  console.log(
    `\n${report.length} line(s) cite what a reader cannot reach: state the reason itself instead of an issue or a commit.`,
  );
  process.exit(1);
}
console.log("no issue numbers, no commit hashes, no links into this project's tracker");
