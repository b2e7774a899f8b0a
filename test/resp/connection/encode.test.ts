import { Buffer } from "node:buffer";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { CommandWriter, encodeCommand } from "../../../resp/connection/encode.ts";
import type { Arg, Reply } from "../../../resp/types.ts";
import { b, cat, check, R, recorder } from "../_vectors.ts";
import { rejects } from "../../support/assert.ts";

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("latin1");
const utf8Bytes = (s: string) => new Uint8Array(Buffer.from(s, "utf8"));
/** Byte-for-byte equality, shown as latin1 text on failure. */
const same = (actual: Uint8Array, expected: Uint8Array, message?: string) =>
  assert.is(text(actual), text(expected), message);

/** The frame a command must encode to, built the slow obvious way. */
function reference(command: readonly Arg[]): Uint8Array {
  const parts: Uint8Array[] = [b(`*${command.length}\r\n`)];
  for (const arg of command) {
    const bytes = arg instanceof Uint8Array ? arg : utf8Bytes(String(arg));
    parts.push(b(`$${bytes.length}\r\n`), bytes, b("\r\n"));
  }
  return cat(...parts);
}

/** Decodes an encoded command with our decoder in buffers mode (a command is a RESP array of bulk strings). */
function decodeCommand(bytes: Uint8Array): Reply[] {
  const { decoder, events } = recorder();
  decoder.buffers = true;
  decoder.feed(bytes);
  return events.map((e) => ("reply" in e ? e.reply : null));
}

const encode = suite("encodeCommand()");

encode("writes an array of bulk strings", () => {
  assert.is(text(encodeCommand(["SET", "key", "value"])), "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n");
  assert.is(text(encodeCommand(["PING"])), "*1\r\n$4\r\nPING\r\n");
  assert.is(text(encodeCommand(["SET", "", ""])), "*3\r\n$3\r\nSET\r\n$0\r\n\r\n$0\r\n\r\n");
});

encode("writes integers in decimal and other numbers in their shortest round-trip form", () => {
  const cases: [number, string][] = [
    [0, "0"],
    [-0, "0"],
    [7, "7"],
    [42, "42"],
    [-42, "-42"],
    [1000000, "1000000"],
    [999999, "999999"],
    [Number.MAX_SAFE_INTEGER, "9007199254740991"],
    [-Number.MAX_SAFE_INTEGER, "-9007199254740991"],
    [1.5, "1.5"],
    [-0.001, "-0.001"],
    [2 ** 60, "1152921504606846976"],
    [-(2 ** 60), "-1152921504606846976"],
    [1e21, "1000000000000000000000"],
    [5e-324, "5e-324"],
  ];
  for (const [n, want] of cases) {
    assert.is(text(encodeCommand(["X", n])), `*2\r\n$1\r\nX\r\n$${want.length}\r\n${want}\r\n`, String(n));
  }
  for (let n = -1200; n <= 1200; n++) same(encodeCommand([n]), reference([n]), String(n));
  for (let d = 1; d <= 16; d++) {
    const n = 10 ** d;
    for (const v of [n - 1, n, n + 1]) if (Number.isSafeInteger(v)) same(encodeCommand([v]), reference([v]), String(v));
  }
});

encode("copies bytes exactly: CRLF, NUL and invalid UTF-8 survive", () => {
  const raw = new Uint8Array([13, 10, 0, 0xff, 0xfe, 0xc3, 0x28, 13, 10]);
  const out = encodeCommand(["SET", "k", raw]);
  assert.equal(Array.from(out), Array.from(cat("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$9\r\n", raw, "\r\n")));
  check(decodeCommand(out).map((v) => R(v)), [R([utf8Bytes("SET"), utf8Bytes("k"), raw])]);
  assert.equal(Array.from(encodeCommand([Buffer.from("ab")])), Array.from(b("*1\r\n$2\r\nab\r\n")));
  assert.equal(Array.from(encodeCommand([new Uint8Array(0)])), Array.from(b("*1\r\n$0\r\n\r\n")));
});

encode("counts UTF-8 bytes, not UTF-16 units, in lengths", () => {
  assert.is(text(encodeCommand(["é"])), "*1\r\n$2\r\n\xc3\xa9\r\n");
  assert.is(text(encodeCommand(["€"])), "*1\r\n$3\r\n\xe2\x82\xac\r\n");
  assert.is(text(encodeCommand(["😀"])), "*1\r\n$4\r\n\xf0\x9f\x98\x80\r\n");
  // A lone surrogate is sent as U+FFFD (3 bytes), like every UTF-8 encoder.
  assert.is(text(encodeCommand(["\ud800"])), "*1\r\n$3\r\n\xef\xbf\xbd\r\n");
  assert.is(text(encodeCommand(["a\r\nb"])), "*1\r\n$4\r\na\r\nb\r\n");
});

encode("gets lengths right around every digit-count boundary, ASCII and not", () => {
  // Non-ASCII strings grow past the digit count guessed from their length
  // (9 units of "é" are 18 bytes), which moves the payload.
  const units = ["a", "é", "€", "😀", "a€", "\ud800"];
  for (const unit of units) {
    for (
      const count of [
        0,
        1,
        3,
        4,
        5,
        9,
        10,
        11,
        16,
        31,
        32,
        33,
        34,
        49,
        50,
        99,
        100,
        101,
        333,
        334,
        999,
        1000,
        3333,
        3334,
        40000,
      ]
    ) {
      const s = unit.repeat(count);
      same(encodeCommand([s]), reference([s]), `${JSON.stringify(unit)} x ${count}`);
    }
  }
  // The ASCII fast path bails out at the first non-ASCII unit anywhere.
  for (let i = 0; i < 40; i++) {
    const s = "x".repeat(i) + "ü" + "y".repeat(39 - i);
    same(encodeCommand([s]), reference([s]), `ü at ${i}`);
  }
});

encode("refuses a bad argument with a TypeError naming its index", async () => {
  const bad = (command: unknown[]) => () => encodeCommand(command as Arg[]);
  await rejects(
    bad(["SET", "k", { a: 1 }]),
    TypeError,
    "Cannot encode command: argument 2 must be a string, number or Uint8Array, got object",
  );
  await rejects(
    bad(["SET", null]),
    TypeError,
    "Cannot encode command: argument 1 must be a string, number or Uint8Array, got null",
  );
  await rejects(
    bad([undefined]),
    TypeError,
    "Cannot encode command: argument 0 must be a string, number or Uint8Array, got undefined",
  );
  await rejects(
    bad(["X", true]),
    TypeError,
    "Cannot encode command: argument 1 must be a string, number or Uint8Array, got boolean",
  );
  await rejects(
    bad(["X", 1n]),
    TypeError,
    "Cannot encode command: argument 1 must be a string, number or Uint8Array, got bigint",
  );
  await rejects(
    bad(["X", ["a"]]),
    TypeError,
    "Cannot encode command: argument 1 must be a string, number or Uint8Array, got array",
  );
  await rejects(
    bad(["X", new ArrayBuffer(2)]),
    TypeError,
    "Cannot encode command: argument 1 must be a string, number or Uint8Array, got object",
  );
  await rejects(bad(["X", "y", NaN]), TypeError, "Cannot encode command: argument 2 must be a finite number, got NaN");
  await rejects(
    bad(["X", Infinity]),
    TypeError,
    "Cannot encode command: argument 1 must be a finite number, got Infinity",
  );
  await rejects(
    bad(["X", -Infinity]),
    TypeError,
    "Cannot encode command: argument 1 must be a finite number, got -Infinity",
  );
  await rejects(bad([]), TypeError, "Cannot encode command: it must have at least one argument");
  await rejects(
    () => encodeCommand("GET k" as unknown as Arg[]),
    TypeError,
    "Cannot encode command: it must be an array of arguments, got string",
  );
});

encode("is reusable after a refused command", async () => {
  await rejects(
    () => encodeCommand(["X", {} as unknown as Arg]),
    TypeError,
    "Cannot encode command: argument 1 must be a string, number or Uint8Array, got object",
  );
  assert.is(text(encodeCommand(["PING"])), "*1\r\n$4\r\nPING\r\n");
});

encode("encodes a large command and returns bytes no later call overwrites", () => {
  const big = "v".repeat(100000);
  const first = encodeCommand(["SET", "k", big]);
  const copy = Uint8Array.from(first);
  const second = encodeCommand(["SET", "k", "w".repeat(100000)]);
  same(first, copy);
  same(second, reference(["SET", "k", "w".repeat(100000)]));
  const small = encodeCommand(["GET", "a"]);
  const smallCopy = Uint8Array.from(small);
  encodeCommand(["GET", "b"]);
  same(small, smallCopy);
});

encode.run();

const writer = suite("CommandWriter");

writer("packs many commands into one buffer, identical to encoding each", () => {
  const w = new CommandWriter({ initialBytes: 16 });
  const parts: Uint8Array[] = [];
  for (let i = 0; i < 10000; i++) {
    const command: Arg[] = i % 3 === 0
      ? ["SET", `key:${i}`, `välue-${i}`, "PX", i]
      : i % 3 === 1
      ? ["GET", `key:${i}`]
      : ["HSET", "h", new Uint8Array([i & 0xff, 13, 10])];
    w.push(command);
    parts.push(encodeCommand(command));
  }
  const expected = cat(...parts);
  assert.is(w.length, expected.length);
  const out = w.take();
  assert.is(out.length, expected.length);
  assert.ok(Buffer.from(out).equals(Buffer.from(expected)));
  assert.is(w.length, 0);
  assert.is(w.take().length, 0);
});

writer("decodes back to the commands it encoded", () => {
  const w = new CommandWriter();
  const commands: Arg[][] = [["SET", "k", "v"], ["INCRBY", "n", -5], ["SET", "b", new Uint8Array([0, 255])], [
    "ECHO",
    "héllo 😀",
  ]];
  for (const c of commands) w.push(c);
  const decoded = decodeCommand(w.take());
  const want = commands.map((c) => c.map((a) => (a instanceof Uint8Array ? a : utf8Bytes(String(a)))));
  check(decoded.map((v) => R(v)), want.map((v) => R(v)));
});

writer("a refused command leaves the commands before it intact", async () => {
  const w = new CommandWriter();
  w.push(["GET", "a"]);
  const before = w.length;
  await rejects(
    () => w.push(["SET", "b", "x".repeat(50), Symbol("no") as unknown as Arg]),
    TypeError,
    "Cannot encode command: argument 3 must be a string, number or Uint8Array, got symbol",
  );
  await rejects(
    () => w.push(["SET", "b", NaN]),
    TypeError,
    "Cannot encode command: argument 2 must be a finite number, got NaN",
  );
  assert.is(w.length, before);
  w.push(["GET", "c"]);
  assert.is(text(w.take()), "*2\r\n$3\r\nGET\r\n$1\r\na\r\n*2\r\n$3\r\nGET\r\n$1\r\nc\r\n");
});

writer("a refused command that moved the untaken bytes to a new slab leaves them intact", async () => {
  // Views of the slab are handed out by take(), so a command too big for the
  // rest of it moves the bytes not yet taken to a new slab mid-command; the
  // rollback after a bad argument must land where they moved.
  const w = new CommandWriter({ initialBytes: 64 });
  w.push(["GET", "a"]);
  const taken = w.take();
  w.push(["GET", "b"]);
  const before = w.length;
  await rejects(
    () => w.push(["SET", "k", "x".repeat(5000), Symbol("no") as unknown as Arg]),
    TypeError,
    "Cannot encode command: argument 3 must be a string, number or Uint8Array, got symbol",
  );
  assert.is(w.length, before);
  w.push(["GET", "c"]);
  assert.is(text(w.take()), "*2\r\n$3\r\nGET\r\n$1\r\nb\r\n*2\r\n$3\r\nGET\r\n$1\r\nc\r\n");
  assert.is(text(taken), "*2\r\n$3\r\nGET\r\n$1\r\na\r\n");
});

writer("take() hands out bytes that later pushes never overwrite, small or large", () => {
  const w = new CommandWriter({ initialBytes: 64 });
  for (const size of [10, 5000, 100000, 10]) {
    w.push(["SET", "k", "a".repeat(size)]);
    const out = w.take();
    const copy = Uint8Array.from(out);
    w.push(["SET", "k", "b".repeat(size)]);
    w.push(["SET", "k", "c".repeat(size)]);
    same(out, copy, `size ${size}`);
    w.take();
  }
});

writer("grows from a tiny buffer for a huge argument", () => {
  const w = new CommandWriter({ initialBytes: 1 });
  const value = new Uint8Array(300000).fill(7);
  w.push(["SET", "k", value]);
  w.push(["SET", "k", "é".repeat(70000)]);
  const out = w.take();
  assert.ok(
    Buffer.from(out).equals(
      Buffer.from(cat(reference(["SET", "k", value]), reference(["SET", "k", "é".repeat(70000)]))),
    ),
  );
});

writer("validates initialBytes", async () => {
  await rejects(
    () => new CommandWriter({ initialBytes: 0 }),
    RangeError,
    "Cannot create CommandWriter: 'initialBytes' must be a positive integer, got 0",
  );
  await rejects(
    () => new CommandWriter({ initialBytes: 2.5 }),
    RangeError,
    "Cannot create CommandWriter: 'initialBytes' must be a positive integer, got 2.5",
  );
});

writer("rewind(): later pushes reuse the slab from its start, and only once every pushed byte was taken", () => {
  const w = new CommandWriter();
  w.push(["SET", "k", "v"]);
  const first = w.take();
  const firstText = text(first);
  w.push(["GET", "k"]);
  w.rewind(); // bytes pushed and not taken: nothing happens
  const second = w.take();
  assert.is(second.byteOffset, first.byteOffset + first.length, "appended after the first, not over it");
  assert.is(text(first), firstText);
  w.rewind();
  w.push(["PING"]);
  const third = w.take();
  assert.is(third.buffer, first.buffer);
  assert.is(third.byteOffset, first.byteOffset, "the same memory again");
  same(third, reference(["PING"]));
});

writer("rewind(): a slab grown past 8 MiB for one batch is let go", () => {
  const w = new CommandWriter();
  w.push(["SET", "big", "x".repeat(9 << 20)]);
  const big = w.take();
  w.rewind();
  w.push(["PING"]);
  const next = w.take();
  assert.is.not(next.buffer, big.buffer);
  assert.ok(next.buffer.byteLength < 1 << 20);
  same(next, reference(["PING"]));
});

writer.run();
