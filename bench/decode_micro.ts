/**
 * Micro benchmark of the RESP decoder: pre-built reply streams fed in 64 KiB
 * chunks, replies per second, best of several runs. No server involved.
 *
 *   node --import tsx bench/decode_micro.ts
 *   bun bench/decode_micro.ts
 *   deno run -A bench/decode_micro.ts
 *
 * When node-redis' `@redis/client` can be imported (installed in bench/, or
 * its decoder's path in NODE_REDIS_DECODER) the same streams go through its
 * decoder too, for comparison.
 */
import { Buffer } from "node:buffer";
import process from "node:process";
import { Decoder } from "../resp/mod.ts";

const CHUNK = 64 * 1024;
const RUNS = 7;

interface Workload {
  name: string;
  replies: number;
  chunks: Buffer[];
  buffers: boolean;
}

function workload(
  name: string,
  replies: number,
  one: (i: number) => string,
  perReply = 1,
  buffers = false,
): Workload {
  const parts: string[] = [];
  for (let i = 0; i < replies / perReply; i++) parts.push(one(i));
  const all = Buffer.from(parts.join(""), "latin1");
  const chunks: Buffer[] = [];
  for (let at = 0; at < all.length; at += CHUNK) {
    chunks.push(all.subarray(at, at + CHUNK));
  }
  return { name, replies, chunks, buffers };
}

const N = 1_000_000;
const pad = (i: number) => String(i % 100000).padStart(5, "0");
const workloads: Workload[] = [
  workload("GET, 10-byte bulk strings", N, (i) => `$10\r\nvalue${pad(i)}\r\n`),
  workload(
    "GET, 10-byte bulks, buffers mode",
    N,
    (i) => `$10\r\nvalue${pad(i)}\r\n`,
    1,
    true,
  ),
  workload(
    "GET, 100-byte bulk strings",
    N,
    (i) => `$100\r\n${"v".repeat(95)}${pad(i)}\r\n`,
  ),
  workload("SET, +OK", N, () => "+OK\r\n"),
  workload("INCR, integers", N, (i) => `:${i}\r\n`),
  workload(
    "MGET x10 (replies = elements)",
    N,
    (i) =>
      `*10\r\n${
        Array.from({ length: 10 }, (_, j) => `$6\r\nv${pad(i * 10 + j)}\r\n`)
          .join("")
      }`,
    10,
  ),
  workload(
    "HGETALL RESP3 map of 5",
    N,
    () => `%5\r\n${Array.from({ length: 5 }, (_, j) => `$2\r\nf${j}\r\n:${j}\r\n`).join("")}`,
    5,
  ),
  workload("ZSCORE RESP3, doubles", N, (i) => `,${i % 1000}.${pad(i)}e-3\r\n`),
  // Lua status replies longer than a header line: each is cut across the 64 KiB chunks.
  workload(
    "status_reply, 128 KiB simple strings",
    2000,
    () => `+${"x".repeat(131072)}\r\n`,
  ),
];

function timeIt(fn: () => number): { best: number; count: number } {
  let best = Infinity;
  let count = 0;
  for (let r = 0; r < RUNS; r++) {
    const t0 = performance.now();
    count = fn();
    const dt = performance.now() - t0;
    if (dt < best) best = dt;
  }
  return { best, count };
}

function ours(w: Workload): number {
  let count = 0;
  const decoder = new Decoder({
    reply() {
      count++;
    },
    push() {},
  });
  decoder.buffers = w.buffers;
  for (const chunk of w.chunks) decoder.feed(chunk);
  return count;
}

type NodeRedisDecoder = new (config: {
  onReply(reply: unknown): void;
  onErrorReply(err: unknown): void;
  onPush(push: unknown[]): void;
  getTypeMapping(): Record<number, unknown>;
}) => { write(chunk: Buffer): void };

async function loadNodeRedis(): Promise<NodeRedisDecoder | undefined> {
  const specifier = process.env["NODE_REDIS_DECODER"] ??
    "@redis/client/dist/lib/RESP/decoder.js";
  try {
    const mod = (await import(specifier)) as {
      Decoder?: NodeRedisDecoder;
      default?: { Decoder?: NodeRedisDecoder };
    };
    return mod.Decoder ?? mod.default?.Decoder;
  } catch {
    return undefined;
  }
}

function theirs(NodeRedis: NodeRedisDecoder, w: Workload): number {
  let count = 0;
  const mapping = w.buffers ? { 36: Buffer } : {};
  const decoder = new NodeRedis({
    onReply() {
      count++;
    },
    onErrorReply() {
      count++;
    },
    onPush() {},
    getTypeMapping: () => mapping,
  });
  for (const chunk of w.chunks) decoder.write(chunk);
  return count;
}

const NodeRedis = await loadNodeRedis();
const runtime = typeof (globalThis as { Bun?: unknown }).Bun !== "undefined"
  ? "bun"
  : typeof (globalThis as { Deno?: unknown }).Deno !== "undefined"
  ? "deno"
  : `node ${process.version}`;
console.log(
  `decode_micro (${runtime}): ${CHUNK / 1024} KiB chunks, best of ${RUNS}`,
);
for (const w of workloads) {
  let mine: { best: number; count: number };
  try {
    mine = timeIt(() => ours(w));
  } catch (e) {
    // An older decoder refuses some workloads (lines over 64 KiB): say so, run the rest.
    console.log(
      `${w.name.padEnd(38)} herdless refused it: ${(e as Error).message}`,
    );
    continue;
  }
  const perSecond = (w.replies / mine.best) * 1000;
  const rate = perSecond >= 1e5
    ? `${(perSecond / 1e6).toFixed(2).padStart(6)} M replies/s`
    : `${(perSecond / 1e3).toFixed(2).padStart(6)} k replies/s`;
  let line = `${w.name.padEnd(38)} herdless ${rate}`;
  if (NodeRedis !== undefined) {
    const other = timeIt(() => theirs(NodeRedis, w));
    if (other.count !== mine.count) {
      line += ` (node-redis counted ${other.count}, we counted ${mine.count})`;
    }
    const otherPerSecond = (w.replies / other.best) * 1000;
    line += `   node-redis ${(otherPerSecond / 1e6).toFixed(2).padStart(6)} M/s   x${
      (perSecond / otherPerSecond).toFixed(2)
    }`;
  }
  console.log(line);
}
