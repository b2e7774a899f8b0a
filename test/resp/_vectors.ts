/**
 * Test helpers for the RESP encoder and decoder: byte builders, a reference
 * RESP3 reply encoder (tests only; the library never encodes replies), a
 * comparable form of decoded values, and the "every split" feeding modes.
 */
import { Buffer } from "node:buffer";
import process from "node:process";
import * as assert from "uvu/assert";
import { Decoder, type DecoderOptions } from "../../resp/decode/decoder.ts";
import { isProtocolError, ProtocolError, RedisReplyError } from "../../resp/errors.ts";
import type { Reply, ReplyMap } from "../../resp/types.ts";

/** Bytes of a string, UTF-8 encoded; `\xNN` escapes in it stay code units, so use `raw` for non-UTF-8 bytes. */
export function b(text: string): Uint8Array {
  return new Uint8Array(Buffer.from(text, "utf8"));
}

/** Concatenates byte parts (strings as UTF-8, number arrays as raw bytes). */
export function cat(...parts: (string | number[] | Uint8Array)[]): Uint8Array {
  const list = parts.map((p) => (typeof p === "string" ? b(p) : p instanceof Uint8Array ? p : new Uint8Array(p)));
  return new Uint8Array(Buffer.concat(list));
}

/** A null-prototype map, as the decoder builds them, from entries in order. */
export function map(entries: [string, Reply][]): ReplyMap {
  const out = Object.create(null) as ReplyMap;
  for (const [k, v] of entries) out[k] = v;
  return out;
}

/** A reply error value. */
export function err(message: string): RedisReplyError {
  return new RedisReplyError(message);
}

/** One thing the decoder reported. */
export type Event =
  | { reply: Reply; attribute?: ReplyMap }
  | { push: Reply[] };

/** Expected reply event. */
export function R(value: Reply, attribute?: ReplyMap): Event {
  return attribute === undefined ? { reply: value } : { reply: value, attribute };
}

/** Expected push event. */
export function P(value: Reply[]): Event {
  return { push: value };
}

/**
 * A form of decoded values that `assert.equal` compares strictly: maps must
 * have a null prototype (and keep key order), errors compare by class and
 * message, bytes by class and content, `-0` and `NaN` are spelled out, and
 * number vs bigint stays distinct.
 */
export function comparable(value: unknown): unknown {
  if (typeof value === "number") {
    if (Number.isNaN(value)) return "$NaN";
    if (Object.is(value, -0)) return "$-0";
    return value;
  }
  if (typeof value === "bigint") return { $bigint: value.toString() };
  if (value === null || typeof value !== "object") return value;
  if (value instanceof RedisReplyError) return { $error: value.message, name: value.name, code: value.code };
  if (value instanceof Uint8Array) {
    return { $bytes: Array.from(value), ctor: value.constructor.name };
  }
  if (Array.isArray(value)) return value.map(comparable);
  if (Object.getPrototypeOf(value) !== null) return { $unexpectedObject: String(value) };
  return { $map: Object.keys(value).map((k) => [k, comparable((value as ReplyMap)[k])]) };
}

/** Compares decoded events with expected ones. */
export function check(actual: Event[], expected: Event[], label = ""): void {
  const form = (events: Event[]) =>
    events.map((e) =>
      "push" in e
        ? { push: comparable(e.push) }
        : e.attribute === undefined
        ? { reply: comparable(e.reply) }
        : { reply: comparable(e.reply), attribute: comparable(e.attribute) }
    );
  assert.equal(form(actual), form(expected), label);
}

/** A decoder that records every event. */
export function recorder(options?: DecoderOptions): { decoder: Decoder; events: Event[] } {
  const events: Event[] = [];
  const decoder = new Decoder({
    reply(value, attribute) {
      events.push(attribute === undefined ? { reply: value } : { reply: value, attribute });
    },
    push(value) {
      events.push({ push: value });
    },
  }, options);
  return { decoder, events };
}

/** One way of cutting an input into chunks, named for failure messages. */
export interface Split {
  name: string;
  chunks: Uint8Array[];
}

function cut(input: Uint8Array, points: number[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  let at = 0;
  for (const p of [...points, input.length]) {
    // Copies, so a decoder keeping a view of a chunk would be caught when
    // chunks are reused; also guarantees no chunk shares memory with input.
    out.push(input.slice(at, p));
    at = p;
  }
  return out;
}

/**
 * Every way to feed `input` the tests use: whole, byte by byte, in two at
 * every boundary and, for short inputs, in three at every pair of
 * boundaries. Long inputs are cut at a sample of boundaries (both ends and
 * evenly spread) to keep the run quick.
 */
export function* splits(input: Uint8Array): Generator<Split> {
  const n = input.length;
  yield { name: "whole", chunks: [input.slice()] };
  if (n > 1) yield { name: "byte by byte", chunks: cut(input, Array.from({ length: n - 1 }, (_, i) => i + 1)) };
  const points: number[] = [];
  if (n <= 600) { for (let i = 1; i < n; i++) points.push(i); }
  else {
    for (let i = 1; i < 80; i++) points.push(i, n - i);
    for (let i = 1; i < 100; i++) points.push(Math.floor((n * i) / 100));
  }
  for (const i of points) yield { name: `split at ${i}`, chunks: cut(input, [i]) };
  if (n <= 48) {
    for (let i = 1; i < n; i++) {
      for (let j = i + 1; j < n; j++) yield { name: `split at ${i} and ${j}`, chunks: cut(input, [i, j]) };
    }
  }
}

/** Decodes `input` in every split mode and checks the events each time. */
export function decodesTo(input: Uint8Array, expected: Event[], options?: DecoderOptions): number {
  let modes = 0;
  for (const split of splits(input)) {
    const { decoder, events } = recorder(options);
    for (const chunk of split.chunks) decoder.feed(chunk);
    check(events, expected, split.name);
    modes++;
  }
  return modes;
}

/**
 * Feeds `input` in every split mode and checks it throws a ProtocolError at
 * `offset` each time, and that the decoder then refuses more input with the
 * same error.
 */
export function refuses(input: Uint8Array, offset: number, options?: DecoderOptions, message?: RegExp): void {
  for (const split of splits(input)) {
    const { decoder } = recorder(options);
    let caught: unknown;
    try {
      for (const chunk of split.chunks) decoder.feed(chunk);
    } catch (e) {
      caught = e;
    }
    if (!isProtocolError(caught)) {
      assert.unreachable(
        `${split.name}: expected a ProtocolError, got ${caught === undefined ? "no error" : String(caught)}`,
      );
    }
    const e = caught as ProtocolError;
    assert.instance(e, ProtocolError);
    assert.is(e.offset, offset, `${split.name}: ${e.message}`);
    if (message !== undefined) assert.match(e.message, message, split.name);
    let again: unknown;
    try {
      decoder.feed(b("+OK\r\n"));
    } catch (e2) {
      again = e2;
    }
    assert.is(again, e, `${split.name}: the decoder must refuse input after an error`);
  }
}

/**
 * Reference RESP3 reply encoder for tests: strings become bulk strings,
 * numbers integers (or doubles when not integers), bigints big numbers,
 * booleans `#`, null `_`, bytes bulk strings, errors simple errors, arrays
 * `*`, null-prototype maps `%`.
 */
export function encodeReply(value: Reply): Uint8Array {
  const parts: Uint8Array[] = [];
  const put = (v: Reply) => {
    if (typeof v === "string") {
      const bytes = Buffer.from(v, "utf8");
      parts.push(b(`$${bytes.length}\r\n`), bytes, b("\r\n"));
    } else if (typeof v === "number") {
      if (Number.isSafeInteger(v)) parts.push(b(`:${v}\r\n`));
      else parts.push(b(`,${Number.isNaN(v) ? "nan" : v === Infinity ? "inf" : v === -Infinity ? "-inf" : v}\r\n`));
    } else if (typeof v === "bigint") parts.push(b(`(${v}\r\n`));
    else if (typeof v === "boolean") parts.push(b(v ? "#t\r\n" : "#f\r\n"));
    else if (v === null) parts.push(b("_\r\n"));
    else if (v instanceof Uint8Array) parts.push(b(`$${v.length}\r\n`), v, b("\r\n"));
    else if (v instanceof RedisReplyError) parts.push(b(`-${v.message}\r\n`));
    else if (Array.isArray(v)) {
      parts.push(b(`*${v.length}\r\n`));
      for (const item of v) put(item);
    } else {
      const keys = Object.keys(v);
      parts.push(b(`%${keys.length}\r\n`));
      for (const k of keys) {
        put(k);
        put(v[k]!);
      }
    }
  };
  put(value);
  return new Uint8Array(Buffer.concat(parts));
}

// The generator lives in test/support/random.ts (one for every test); this
// name stays for files that import it from here.
export { mulberry32 as prng } from "../support/random.ts";

/** A random reply tree, for round trips through `encodeReply` and the decoder. */
export function randomReply(random: () => number, depth = 0): Reply {
  const pick = Math.floor(random() * (depth > 4 ? 8 : 11));
  const text = () => {
    const alphabet = ["a", "b", "\r", "\n", "é", "€", "😀", " ", "$", "*", ":"];
    let s = "";
    const len = Math.floor(random() * 12);
    for (let i = 0; i < len; i++) s += alphabet[Math.floor(random() * alphabet.length)];
    return s;
  };
  switch (pick) {
    case 0:
      return text();
    case 1:
      return Math.floor((random() - 0.5) * 2 ** 40);
    case 2:
      return BigInt(Math.floor(random() * 1e9)) * 10n ** 20n;
    case 3:
      return random() < 0.5;
    case 4:
      return null;
    case 5:
      return (random() - 0.5) * 1e6;
    case 6:
      return err(`ERR ${text().replace(/[\r\n]/g, "")}`);
    case 7:
      return "x".repeat(Math.floor(random() * 3000));
    case 8:
    case 9: {
      const items: Reply[] = [];
      const len = Math.floor(random() * 5);
      for (let i = 0; i < len; i++) items.push(randomReply(random, depth + 1));
      return items;
    }
    default: {
      const entries: [string, Reply][] = [];
      const len = Math.floor(random() * 4);
      for (let i = 0; i < len; i++) entries.push([`k${i}${text()}`, randomReply(random, depth + 1)]);
      return map(entries);
    }
  }
}

/**
 * Bytes held outside the JS heap, ArrayBuffers and Buffers included, on
 * Node, Bun and Deno alike (`arrayBuffers` reads 0 on Bun and Deno). Bun
 * updates the figure only when it collects, so it collects first; Node and
 * Deno count an allocation at once.
 */
export function offHeap(): number {
  const g = globalThis as { Bun?: { gc(force: boolean): void }; gc?: () => void };
  g.Bun?.gc(true);
  g.gc?.();
  return process.memoryUsage().external;
}
