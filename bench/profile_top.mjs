// Top frames of V8 CPU profiles (.cpuprofile, as written by `node --cpu-prof`
// or `npm run bench -- --cpu-prof`): self time per function, and total time
// (self + callees) for the same functions, as a share of the samples that
// were not idle.
//
//   node bench/profile_top.mjs bench/.out/prof/node-get-100-ours-1.cpuprofile [more...] [--top 25]
import { readFileSync } from "node:fs";
import { basename } from "node:path";

const args = process.argv.slice(2);
const topAt = args.indexOf("--top");
const top = topAt >= 0 ? Number(args[topAt + 1]) : 25;
const files = args.filter((a, i) => !a.startsWith("--") && (topAt < 0 || i !== topAt + 1));

for (const file of files) {
  const profile = JSON.parse(readFileSync(file, "utf8"));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) {
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const counts = new Map();
  for (const id of profile.samples) counts.set(id, (counts.get(id) ?? 0) + 1);

  const label = (n) => {
    const f = n.callFrame;
    const where = f.url ? `${basename(f.url)}:${f.lineNumber + 1}` : "";
    return `${f.functionName || "(anonymous)"} ${where}`.trim();
  };
  const self = new Map();
  const total = new Map();
  let busy = 0;
  let idle = 0;
  let program = 0;
  for (const [id, count] of counts) {
    const n = byId.get(id);
    const name = n.callFrame.functionName;
    if (name === "(idle)") {
      idle += count;
      continue;
    }
    if (name === "(program)") {
      program += count;
      continue;
    }
    busy += count;
    const l = label(n);
    self.set(l, (self.get(l) ?? 0) + count);
    // Count each function once per sample, however deep it recurses.
    const seen = new Set();
    for (let at = id; at !== undefined; at = parent.get(at)) {
      const al = label(byId.get(at));
      if (seen.has(al)) continue;
      seen.add(al);
      total.set(al, (total.get(al) ?? 0) + count);
    }
  }
  const pct = (c) => `${((c * 100) / busy).toFixed(1)}%`.padStart(6);
  const all = busy + idle + program;
  console.log(
    `\n${basename(file)}: ${busy} samples in JS or GC; of all samples ${
      ((idle * 100) / all).toFixed(1)
    }% idle (waiting in the event loop), ` +
      `${((program * 100) / all).toFixed(1)}% (program) (native work outside JS: syscalls, libuv, the rest of V8)`,
  );
  console.log("  self   total  function");
  for (const [l, c] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${pct(c)} ${pct(total.get(l) ?? c)}  ${l}`);
  }
}
