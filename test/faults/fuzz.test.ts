/**
 * Property-based fuzzing of the RESP decoder with fast-check: random valid
 * replies written by a reference encoder (below, independent of
 * resp/connection/encode.ts and of the decoder's own test vectors) decode to what the
 * encoder meant however the stream is split; random and mutated bytes never
 * throw anything but ProtocolError, and give the same outcome (events and
 * error offset) split or whole. Runs are bounded so the file takes seconds.
 */
import process from "node:process";
import fc from "fast-check";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Decoder } from "../../resp/decode/decoder.ts";
import { isProtocolError, type ProtocolError, RedisReplyError } from "../../resp/errors.ts";
import type { Reply } from "../../resp/types.ts";
import { seed } from "../support/random.ts";

/** FUZZ_SCALE=20 runs twenty times as many cases (a deeper local hunt); CI runs the default. */
const scale = Math.max(1, Number(process.env.FUZZ_SCALE ?? 1) || 1);
const runs = (n: number) => ({ numRuns: n * scale, seed });

const te = new TextEncoder();
const td = new TextDecoder();

// --- the reference encoder: a model reply and the bytes that carry it ---

/** A model of one RESP frame: its bytes and what it must decode to, in strings and in buffers mode. */
interface Frame {
  bytes: Uint8Array;
  text: Reply;
  bin: Reply;
}

function cat(...parts: (string | Uint8Array)[]): Uint8Array {
  const arrays = parts.map((p) => (typeof p === "string" ? te.encode(p) : p));
  const out = new Uint8Array(arrays.reduce((n, a) => n + a.length, 0));
  let at = 0;
  for (const a of arrays) {
    out.set(a, at);
    at += a.length;
  }
  return out;
}

const int64 = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });
/** Text without CR or LF, for line-based types. */
const line = fc.string({ unit: "grapheme", maxLength: 12 }).map((s) => s.replace(/[\r\n]/g, "_"));
const utf8Text = fc.string({ unit: "grapheme", maxLength: 20 });
const anyBytes = fc.uint8Array({ maxLength: 24 });

const scalar: fc.Arbitrary<Frame> = fc.oneof(
  line.map((s) => ({ bytes: cat("+", s, "\r\n"), text: s, bin: s })),
  line.map((s) => {
    const e = new RedisReplyError(`ERR ${s}`);
    return { bytes: cat("-ERR ", s, "\r\n"), text: e, bin: e };
  }),
  int64.map((n) => {
    const v = n >= -(2n ** 53n - 1n) && n <= 2n ** 53n - 1n ? Number(n) : n;
    return { bytes: cat(":", String(n), "\r\n"), text: v, bin: v };
  }),
  // Valid UTF-8 in strings mode; any bytes in buffers mode.
  utf8Text.map((s) => ({ bytes: cat(`$${te.encode(s).length}\r\n`, s, "\r\n"), text: s, bin: te.encode(s) })),
  anyBytes.map((b) => ({ bytes: cat(`$${b.length}\r\n`, b, "\r\n"), text: td.decode(b), bin: b })),
  fc.constantFrom("_\r\n", "$-1\r\n", "*-1\r\n").map((s) => ({ bytes: te.encode(s), text: null, bin: null })),
  // Spellings of servers before 7.2 (C library printf) too: any case, signs, nan payloads.
  fc.oneof(
    fc.double(),
    fc.constantFrom("inf", "-inf", "nan", "1e10", "-2.5E-3", ".5", "3."),
    fc.constantFrom("INF", "-INF", "+inf", "Inf", "NAN", "-nan", "nan(0x7ff)", "-NaN(ind)", "nan()"),
  ).map((d) => {
    const text = typeof d === "string"
      ? d
      : Number.isNaN(d)
      ? "nan"
      : d === Infinity
      ? "inf"
      : d === -Infinity
      ? "-inf"
      : String(d);
    const word = text.toLowerCase().replace(/^\+/, "");
    const v = word === "inf" ? Infinity : word === "-inf" ? -Infinity : word.includes("nan") ? NaN : Number(text);
    return { bytes: cat(",", text, "\r\n"), text: v, bin: v };
  }),
  fc.boolean().map((b) => ({ bytes: te.encode(b ? "#t\r\n" : "#f\r\n"), text: b, bin: b })),
  fc.bigInt({ min: -(10n ** 40n), max: 10n ** 40n }).map((n) => ({
    bytes: cat("(", String(n), "\r\n"),
    text: n,
    bin: n,
  })),
  utf8Text.map((s) => {
    const body = te.encode(`txt:${s}`);
    return { bytes: cat(`=${body.length}\r\n`, body, "\r\n"), text: s, bin: te.encode(s) };
  }),
  line.map((s) => {
    const e = new RedisReplyError(`SYNTAX ${s}`);
    return { bytes: cat(`!${te.encode(`SYNTAX ${s}`).length}\r\nSYNTAX `, s, "\r\n"), text: e, bin: e };
  }),
  // A streamed string: `$?` then `;n` parts, ended by `;0`.
  fc.array(utf8Text.filter((s) => s.length > 0), { maxLength: 3 }).map((parts) => {
    const s = parts.join("");
    return {
      bytes: cat("$?\r\n", ...parts.map((p) => cat(`;${te.encode(p).length}\r\n`, p, "\r\n")), ";0\r\n"),
      text: s,
      bin: te.encode(s),
    };
  }),
);

const { reply } = fc.letrec<{ reply: Frame; aggregate: Frame }>((tie) => ({
  reply: fc.oneof({ depthSize: "small", withCrossShrink: true }, scalar, tie("aggregate")),
  aggregate: fc.oneof(
    fc.tuple(fc.constantFrom("*", "~"), fc.boolean(), fc.array(tie("reply"), { maxLength: 4 })).map((
      [type, streamed, items],
    ) => ({
      bytes: cat(
        streamed ? `${type}?\r\n` : `${type}${items.length}\r\n`,
        ...items.map((i) => i.bytes),
        streamed ? ".\r\n" : "",
      ),
      text: items.map((i) => i.text),
      bin: items.map((i) => i.bin),
    })),
    fc.tuple(
      fc.boolean(),
      fc.uniqueArray(fc.tuple(fc.stringMatching(/^[a-z_]{1,6}$/), tie("reply")), {
        selector: ([k]) => k,
        maxLength: 3,
      }),
    )
      .map(([streamed, pairs]) => {
        const text: Record<string, Reply> = Object.create(null);
        const bin: Record<string, Reply> = Object.create(null);
        for (const [k, v] of pairs) {
          text[k] = v.text;
          bin[k] = v.bin;
        }
        return {
          bytes: cat(
            streamed ? "%?\r\n" : `%${pairs.length}\r\n`,
            ...pairs.map(([k, v]) => cat("+", k, "\r\n", v.bytes)),
            streamed ? ".\r\n" : "",
          ),
          text,
          bin,
        };
      }),
    // A nested attribute annotates the next element and is not one itself.
    fc.tuple(fc.stringMatching(/^[a-z]{1,4}$/), tie("reply")).map(([k, inner]) => ({
      bytes: cat("*1\r\n|1\r\n+", k, "\r\n:1\r\n", inner.bytes),
      text: [inner.text],
      bin: [inner.bin],
    })),
  ),
}));

type Event = { reply: Reply; attribute: Reply | undefined } | { push: Reply };

/** A stream of top-level frames: replies (some after an attribute) and pushes. */
const stream = fc.array(
  fc.oneof(
    reply.map((
      f,
    ): [Uint8Array, Event, Event] => [f.bytes, { reply: f.text, attribute: undefined }, {
      reply: f.bin,
      attribute: undefined,
    }]),
    fc.tuple(fc.stringMatching(/^[a-z]{1,4}$/), fc.integer(), reply).map(([k, n, f]): [Uint8Array, Event, Event] => [
      cat("|1\r\n+", k, `\r\n:${n}\r\n`, f.bytes),
      { reply: f.text, attribute: { [k]: n } },
      { reply: f.bin, attribute: { [k]: n } },
    ]),
    fc.array(reply, { minLength: 1, maxLength: 3 }).map((items): [Uint8Array, Event, Event] => [
      cat(`>${items.length}\r\n`, ...items.map((i) => i.bytes)),
      { push: items.map((i) => i.text) },
      { push: items.map((i) => i.bin) },
    ]),
  ),
  { minLength: 1, maxLength: 6 },
);

// --- running the decoder ---

/** Comparable form: errors by name and message, bytes as hex, -0 and NaN kept apart, prototypes ignored. */
function norm(v: unknown): unknown {
  if (v instanceof RedisReplyError) return { error: v.message };
  if (v instanceof Uint8Array) return { bytes: Array.from(v, (b) => b.toString(16).padStart(2, "0")).join("") };
  if (typeof v === "bigint") return { bigint: String(v) };
  if (typeof v === "number") return Number.isNaN(v) ? { nan: true } : Object.is(v, -0) ? { negzero: true } : v;
  if (Array.isArray(v)) return v.map(norm);
  if (v !== null && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) out[k] = norm((v as Record<string, unknown>)[k]);
    return { map: out };
  }
  return v;
}

interface Outcome {
  events: unknown[];
  error: { name: string; offset: number | undefined; message: string } | undefined;
}

/** Feed `bytes` cut at `cuts` (offsets, any order), in strings or buffers mode; never throws. */
function decode(bytes: Uint8Array, cuts: number[], buffers: boolean, limits = { maxBulkBytes: 1 << 16 }): Outcome {
  const events: unknown[] = [];
  const decoder = new Decoder(
    {
      reply: (value, attribute) => events.push(norm({ reply: value, attribute })),
      push: (value) => events.push(norm({ push: value })),
    },
    limits,
  );
  decoder.buffers = buffers;
  decoder.pushBuffers = buffers;
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  let error: Outcome["error"];
  try {
    let from = 0;
    for (const to of [...points, bytes.length]) {
      // A copy, so a decoder that kept a view of a chunk would show up.
      decoder.feed(bytes.slice(from, to));
      from = to;
    }
  } catch (e) {
    const err = e as Error;
    error = { name: err.name, offset: (e as ProtocolError).offset, message: err.message };
  }
  return { events, error };
}

const cuts = fc.array(fc.nat(), { maxLength: 12 });

const test = suite("Decoder fuzzing (fast-check)");

test("random valid replies decode to what the reference encoder meant, split at random points", () => {
  fc.assert(
    fc.property(stream, cuts, fc.boolean(), (frames, at, buffers) => {
      const bytes = cat(...frames.map((f) => f[0]));
      const expected = frames.map((f) => norm(buffers ? f[2] : f[1]));
      const got = decode(bytes, at, buffers);
      assert.equal(got.error, undefined, "no error");
      assert.equal(got.events, expected);
    }),
    runs(400),
  );
});

test("a valid stream fed one byte at a time decodes the same as whole", () => {
  fc.assert(
    fc.property(stream, (frames) => {
      const bytes = cat(...frames.map((f) => f[0]));
      const every = Array.from({ length: bytes.length }, (_, i) => i);
      assert.equal(decode(bytes, every, false), decode(bytes, [], false));
    }),
    runs(60),
  );
});

/** Bytes that look like RESP often enough to reach deep paths, and break it often enough to fail in them. */
const respish = fc
  .array(
    fc.constantFrom(
      "*",
      "$",
      ":",
      "+",
      "-",
      "%",
      "~",
      "|",
      ">",
      "_",
      "#",
      ",",
      "(",
      "=",
      "!",
      "?",
      ";",
      ".",
      "\r\n",
      "\r\n",
      "\r\n",
      "\r",
      "\n",
      "0",
      "1",
      "2",
      "3",
      "-1",
      "t",
      "f",
      "abc",
      "inf",
      "nan",
      "txt:",
      "9999999999999999999",
      "65537",
      "1e5",
      "\x00",
      "\xff",
    ),
    { maxLength: 60 },
  )
  .map((parts) => Uint8Array.from(parts.join(""), (c) => c.charCodeAt(0) & 0xff));

function checkError(outcome: Outcome, length: number): void {
  if (outcome.error === undefined) return;
  const { name, offset, message } = outcome.error;
  assert.is(name, "ProtocolError", `only ProtocolError is thrown, got ${name}: ${message}`);
  assert.type(offset, "number");
  assert.ok(offset! >= 0 && offset! < length, `offset ${offset} within the ${length} bytes`);
}

/**
 * Split or whole, the decoder reaches the same verdict. One allowance: a
 * text line (`+`, `-`, `:`, `,`, `(`) cut before its LF is judged when the
 * LF arrives (re-scanning it on every tiny chunk would be quadratic), so a
 * split stream that ends inside a bad line may not have failed yet. It has
 * then decoded a prefix of the same events, and once a CRLF follows it fails
 * exactly as the whole stream does.
 */
function checkOutcome(bytes: Uint8Array, at: number[], buffers: boolean): void {
  const whole = decode(bytes, [], buffers);
  checkError(whole, bytes.length);
  const split = decode(bytes, at, buffers);
  checkError(split, bytes.length);
  if (split.error !== undefined) assert.equal(split, whole, "a split stream fails as the whole one does");
  else {assert.equal(
      split.events,
      whole.events.slice(0, split.events.length),
      "a split stream decodes a prefix of the same events",
    );}
  const ended = cat(bytes, "\r\n");
  assert.equal(
    decode(ended, at, buffers),
    decode(ended, [], buffers),
    "with a CRLF after it, the same events and error however it is split",
  );
}

test("random bytes never throw anything but ProtocolError, and give the same outcome split or whole", () => {
  fc.assert(fc.property(fc.uint8Array({ maxLength: 200 }), cuts, fc.boolean(), checkOutcome), runs(1500));
  fc.assert(fc.property(respish, cuts, fc.boolean(), checkOutcome), runs(3000));
});

test("valid streams with a byte changed, dropped or inserted: ProtocolError or a decode, the same split or whole", () => {
  const mutated = fc.tuple(
    stream,
    fc.nat(),
    fc.integer({ min: 0, max: 255 }),
    fc.constantFrom("set", "drop", "insert", "truncate"),
  ).map(([frames, where, byte, how]) => {
    const bytes = cat(...frames.map((f) => f[0]));
    const i = where % bytes.length;
    if (how === "set") bytes[i] = byte;
    if (how === "drop") return cat(bytes.subarray(0, i), bytes.subarray(i + 1));
    if (how === "insert") return cat(bytes.subarray(0, i), new Uint8Array([byte]), bytes.subarray(i));
    if (how === "truncate") return bytes.slice(0, i);
    return bytes;
  });
  fc.assert(fc.property(mutated, cuts, fc.boolean(), checkOutcome), runs(1500));
});

test("after a ProtocolError every later feed throws the same error", () => {
  fc.assert(
    fc.property(respish, fc.uint8Array({ minLength: 1, maxLength: 20 }), (bytes, more) => {
      const decoder = new Decoder({ reply: () => {}, push: () => {} }, { maxBulkBytes: 1 << 16 });
      let first: unknown;
      try {
        decoder.feed(bytes);
      } catch (e) {
        first = e;
      }
      if (first === undefined) return;
      assert.ok(isProtocolError(first));
      assert.throws(() => decoder.feed(more), (e: unknown) => e === first);
    }),
    runs(500),
  );
});

test.run();
