/**
 * Where a near entry's memory goes, part by part: 100,000 of the cache
 * table's values held as the reply text a client-side cache keeps (what
 * node-redis' `clientSideCache` holds), as the decoded value alone, as the
 * `StoredEntry` herdless decodes (value and header), and as that entry in
 * near()'s tier under its data key. Each part runs in a process of its own
 * and is compared with a process that holds nothing, V8 heap after gc.
 *
 * It measures internal pieces (the envelope's decoder, the SIEVE tier), so it
 * imports them, not the package's entry.
 *
 * Run from the repository root: `node --expose-gc --import tsx bench/experiments/near_entry_parts.ts`.
 *
 * @module
 */
import { execFileSync } from "node:child_process";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { resolveCodec } from "../../strategies/codec/codec.ts";
import { SieveTier } from "../../strategies/near.ts";
import { decodeStored, encodeEnvelope, type EnvelopeFields } from "../../strategies/pipeline/read/envelope.ts";
import { CACHE_VALUE_BYTES, cacheValue } from "../item.ts";

const ENTRIES = 100_000;
const PARTS = {
  nothing: "nothing (the baseline)",
  reply: "the reply text (what a client-side cache of replies keeps)",
  value: "the decoded value alone",
  entry: "the StoredEntry: decoded value and header",
  tier: "the StoredEntry in near()'s tier, under its data key",
} as const;
type Part = keyof typeof PARTS;

/** The envelope of value `i` as Redis returns it, with a distinct publication time and id. */
function reply(i: number): string {
  const fields = {
    negative: false,
    freshMs: 600_000,
    staleMs: 0,
    ifErrorMs: 0,
    loadMs: 3,
    id: `id${String(i).padStart(10, "0")}`,
    epoch: "EpOcHtOkEn12",
    codec: "json",
    tags: [],
    tagVersions: [],
  } as unknown as EnvelopeFields;
  const text = encodeEnvelope(fields, JSON.stringify(cacheValue(i))) as string;
  // The script stamps publishedAt in place: 13 digits at offset 6.
  return text.slice(0, 6) + String(1_733_400_000_000 + i) + text.slice(19);
}

/** Bytes of V8 heap per entry that holding `part` costs, measured in this process. */
function measure(part: Part): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error("run with node --expose-gc");
  const heap = () => (gc(), gc(), process.memoryUsage().heapUsed);
  const codec = resolveCodec("json");
  const keys = Array.from(
    { length: ENTRIES },
    (_, i) => `bench:{${String(i).padStart(43, "0")}}:data`,
  );
  const held: unknown[] = [];
  const tier = new SieveTier(ENTRIES, Infinity, () => performance.now());
  const before = heap();
  for (let i = 0; i < ENTRIES; i++) {
    const raw = reply(i);
    if (part === "reply") held.push(raw.split("").join(""));
    else if (part === "value") {
      held.push(JSON.parse(raw.slice(raw.indexOf("{"))));
    } else if (part === "entry") held.push(decodeStored(raw, codec));
    else if (part === "tier") tier.set(keys[i]!, decodeStored(raw, codec), 0);
  }
  const after = heap();
  // Both stay alive until here, so the collections above could not free them.
  if (held.length + tier.size + keys.length === 0) {
    throw new Error("unreachable");
  }
  return (after - before) / ENTRIES;
}

const part = process.argv[2] as Part | undefined;
if (part !== undefined) {
  console.log(measure(part).toFixed(1));
} else {
  const self = fileURLToPath(import.meta.url);
  const run = (p: Part) =>
    Number(
      execFileSync(process.execPath, [
        "--expose-gc",
        "--import",
        "tsx",
        self,
        p,
      ], { encoding: "utf8" }).trim(),
    );
  const baseline = run("nothing");
  console.log(
    `${ENTRIES.toLocaleString("en")} entries of ${CACHE_VALUE_BYTES}-byte JSON, V8 heap per entry after gc:`,
  );
  for (const p of Object.keys(PARTS) as Part[]) {
    if (p === "nothing") continue;
    console.log(
      `  ${(run(p) - baseline).toFixed(0).padStart(5)} B  ${PARTS[p]}`,
    );
  }
}
