import { Buffer } from "node:buffer";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Decoder, type DecoderOptions } from "../../../resp/decode/decoder.ts";
import { isProtocolError, ProtocolError, RedisReplyError } from "../../../resp/errors.ts";
import type { Reply } from "../../../resp/types.ts";
import {
  b,
  cat,
  check,
  comparable,
  decodesTo,
  encodeReply,
  err,
  type Event,
  map,
  offHeap,
  P,
  R,
  randomReply,
  recorder,
  refuses,
} from "../_vectors.ts";
import { random as randomStream } from "../../support/random.ts";

/**
 * Feed `input` in `size`-byte pieces through ONE reused chunk that is
 * scribbled over after each feed, as a socket may reuse its read buffer: a
 * value that kept a view of it would change.
 */
function feedThroughScratch(decoder: Decoder, input: Uint8Array, size: number): void {
  const scratch = new Uint8Array(size);
  for (let at = 0; at < input.length; at += size) {
    const part = input.subarray(at, at + size);
    scratch.set(part);
    decoder.feed(scratch.subarray(0, part.length));
    scratch.fill(0x21);
  }
}

const MAX = Number.MAX_SAFE_INTEGER;
const bytes = (...n: number[]) => new Uint8Array(n);

/** Valid streams and the events they decode to, in strings mode. */
const valid: [name: string, input: Uint8Array, expected: Event[], options?: DecoderOptions][] = [
  ["simple string", b("+OK\r\n"), [R("OK")]],
  ["empty simple string", b("+\r\n"), [R("")]],
  ["simple string with UTF-8", b("+héllo 😀\r\n"), [R("héllo 😀")]],
  ["NUL byte inside a simple string", cat("+a", [0], "b\r\n"), [R("a\u0000b")]],
  ["NUL byte inside an error", cat("-ERR a", [0], "\r\n"), [R(err("ERR a\u0000"))]],
  ["NUL bytes inside a bulk", cat("$3\r\n", [0, 0, 0], "\r\n"), [R("\u0000\u0000\u0000")]],
  ["empty simple error", b("-\r\n"), [R(err(""))]],
  ["empty blob error", b("!0\r\n\r\n"), [R(err(""))]],
  ["an attribute that ends the input waits for its reply", b("|1\r\n+k\r\n+v\r\n"), []],
  ["long simple string (native scan path)", b(`+${"abc".repeat(100)}\r\n`), [R("abc".repeat(100))]],
  ["simple error", b("-ERR unknown command\r\n"), [R(err("ERR unknown command"))]],
  ["error code only", b("-NOSCRIPT\r\n"), [R(err("NOSCRIPT"))]],
  ["integer", b(":1000\r\n"), [R(1000)]],
  ["zero", b(":0\r\n"), [R(0)]],
  ["negative integer", b(":-42\r\n"), [R(-42)]],
  ["negative zero integer is 0", b(":-0\r\n"), [R(0)]],
  ["plus sign", b(":+7\r\n"), [R(7)]],
  ["2^53 - 1 is a number", b(":9007199254740991\r\n"), [R(MAX)]],
  ["-(2^53 - 1) is a number", b(":-9007199254740991\r\n"), [R(-MAX)]],
  ["2^53 is a bigint", b(":9007199254740992\r\n"), [R(9007199254740992n)]],
  ["2^53 + 1 exact", b(":9007199254740993\r\n"), [R(9007199254740993n)]],
  ["int64 max", b(":9223372036854775807\r\n"), [R(9223372036854775807n)]],
  ["int64 min", b(":-9223372036854775808\r\n"), [R(-9223372036854775808n)]],
  ["leading zeros in a long integer", b(":0000000000000000000042\r\n"), [R(42)]],
  ["15 digits stay on the fast path", b(":999999999999999\r\n"), [R(999999999999999)]],
  ["bulk string", b("$5\r\nhello\r\n"), [R("hello")]],
  ["empty bulk string", b("$0\r\n\r\n"), [R("")]],
  ["binary-safe bulk with CRLF inside", b("$8\r\nab\r\n\r\ncd\r\n"), [R("ab\r\n\r\ncd")]],
  ["bulk with multibyte UTF-8", b("$4\r\n€a\r\n"), [R("€a")]],
  ["invalid UTF-8 becomes U+FFFD", cat("$3\r\n", [0x61, 0xff, 0x62], "\r\n"), [R("a\ufffdb")]],
  ["RESP2 null bulk", b("$-1\r\n"), [R(null)]],
  ["RESP2 null array", b("*-1\r\n"), [R(null)]],
  ["RESP3 null", b("_\r\n"), [R(null)]],
  ["array", b("*3\r\n:1\r\n$3\r\nfoo\r\n+bar\r\n"), [R([1, "foo", "bar"])]],
  ["empty array", b("*0\r\n"), [R([])]],
  ["nested arrays", b("*2\r\n*2\r\n:1\r\n:2\r\n*1\r\n*0\r\n"), [R([[1, 2], [[]]])]],
  ["array holding nulls", b("*3\r\n$-1\r\n*-1\r\n_\r\n"), [R([null, null, null])]],
  ["error inside an aggregate stays in place", b("*2\r\n+OK\r\n-ERR bad\r\n"), [R(["OK", err("ERR bad")])]],
  ["double", b(",3.14\r\n"), [R(3.14)]],
  ["double integer form", b(",10\r\n"), [R(10)]],
  ["double exponent", b(",1.5e10\r\n"), [R(1.5e10)]],
  ["double negative exponent", b(",-2.5E-3\r\n"), [R(-2.5e-3)]],
  ["double inf", b(",inf\r\n"), [R(Infinity)]],
  ["double -inf", b(",-inf\r\n"), [R(-Infinity)]],
  ["double nan", b(",nan\r\n"), [R(NaN)]],
  ["double -nan", b(",-nan\r\n"), [R(NaN)]],
  ["double -0", b(",-0\r\n"), [R(-0)]],
  ["double .5", b(",.5\r\n"), [R(0.5)]],
  ["double 3. (a C library spelling)", b(",3.\r\n"), [R(3)]],
  ["double +inf", b(",+inf\r\n"), [R(Infinity)]],
  ["double INF (older servers, upper case)", b(",INF\r\n"), [R(Infinity)]],
  ["double -INF", b(",-INF\r\n"), [R(-Infinity)]],
  ["double Inf in mixed case", b(",Inf\r\n"), [R(Infinity)]],
  ["double NAN", b(",NAN\r\n"), [R(NaN)]],
  ["double nan(0x7ff) payload", b(",nan(0x7ff)\r\n"), [R(NaN)]],
  ["double -nan(ind) (MSVC)", b(",-nan(ind)\r\n"), [R(NaN)]],
  ["double NaN() empty payload", b(",NaN()\r\n"), [R(NaN)]],
  ["double smallest normal, bit-exact", b(",2.2250738585072014e-308\r\n"), [R(2.2250738585072014e-308)]],
  ["double largest finite, bit-exact", b(",1.7976931348623157e308\r\n"), [R(1.7976931348623157e308)]],
  ["double smallest subnormal", b(",4.9406564584124654e-324\r\n"), [R(5e-324)]],
  ["double leading zeros and a plus exponent", b(",007.50E+2\r\n"), [R(750)]],
  ["boolean true", b("#t\r\n"), [R(true)]],
  ["boolean false", b("#f\r\n"), [R(false)]],
  ["big number", b("(3492890328409238509324850943850943825024385\r\n"), [
    R(3492890328409238509324850943850943825024385n),
  ]],
  ["negative big number", b("(-123\r\n"), [R(-123n)]],
  ["small big number is still a bigint", b("(+5\r\n"), [R(5n)]],
  ["verbatim string", b("=15\r\ntxt:Some string\r\n"), [R("Some string")]],
  ["verbatim markdown", b("=6\r\nmkd:**\r\n"), [R("**")]],
  ["verbatim empty text", b("=4\r\ntxt:\r\n"), [R("")]],
  ["blob error", b("!21\r\nSYNTAX invalid syntax\r\n"), [R(err("SYNTAX invalid syntax"))]],
  ["blob error with CRLF", b("!7\r\nERR a\r\n\r\n"), [R(err("ERR a\r\n"))]],
  ["map", b("%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n"), [R(map([["first", 1], ["second", 2]]))]],
  ["empty map", b("%0\r\n"), [R(map([]))]],
  ["map keys coerced with String()", b("%3\r\n:1\r\n+a\r\n#t\r\n+b\r\n_\r\n+c\r\n"), [
    R(map([["1", "a"], ["true", "b"], ["null", "c"]])),
  ]],
  ["map with an array key", b("%1\r\n*2\r\n:1\r\n:2\r\n+v\r\n"), [R(map([["1,2", "v"]]))]],
  ["map with a map key", b("%1\r\n%0\r\n+v\r\n"), [R(map([["[object Object]", "v"]]))]],
  ["map holding a map", b("%1\r\n$1\r\nm\r\n%1\r\n$1\r\nk\r\n$1\r\nv\r\n"), [R(map([["m", map([["k", "v"]])]]))]],
  ["set is an array", b("~3\r\n+a\r\n+b\r\n:1\r\n"), [R(["a", "b", 1])]],
  ["empty set", b("~0\r\n"), [R([])]],
  ["push goes to push()", b(">3\r\n+message\r\n+ch\r\n+hi\r\n"), [P(["message", "ch", "hi"])]],
  ["empty push", b(">0\r\n"), [P([])]],
  ["push between replies takes no reply slot", b("+a\r\n>2\r\n+invalidate\r\n*1\r\n+k\r\n+b\r\n"), [
    R("a"),
    P(["invalidate", ["k"]]),
    R("b"),
  ]],
  ["push nested in an array is an array", b("*1\r\n>1\r\n:1\r\n"), [R([[1]])]],
  [
    "attribute delivered with the next reply",
    b("|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.19\r\n*2\r\n:2\r\n:9\r\n"),
    [
      R([2, 9], map([["key-popularity", map([["a", 0.19]])]])),
    ],
  ],
  ["attribute applies to one reply only", b("|1\r\n+k\r\n+v\r\n+a\r\n+b\r\n"), [R("a", map([["k", "v"]])), R("b")]],
  ["two attributes in a row merge", b("|1\r\n+k\r\n+v\r\n|1\r\n+j\r\n+w\r\n:1\r\n"), [
    R(1, map([["k", "v"], ["j", "w"]])),
  ]],
  ["empty attribute", b("|0\r\n:1\r\n"), [R(1, map([]))]],
  ["nested attribute is dropped, not an element", b("*2\r\n|1\r\n+ttl\r\n:3600\r\n:1\r\n|0\r\n:2\r\n"), [R([1, 2])]],
  ["attribute nested in a map value position", b("%1\r\n+k\r\n|1\r\n+a\r\n+b\r\n+v\r\n"), [R(map([["k", "v"]]))]],
  ["attribute before a push belongs to the push", b("|1\r\n+k\r\n+v\r\n>1\r\n+p\r\n+r\r\n"), [P(["p"]), R("r")]],
  ["attribute holding a push is an array inside", b("|1\r\n+k\r\n>1\r\n:1\r\n+r\r\n"), [R("r", map([["k", [1]]]))]],
  ["streamed string", b("$?\r\n;4\r\nHell\r\n;5\r\no wor\r\n;1\r\nd\r\n;0\r\n"), [R("Hello word")]],
  ["streamed string with CRLF in a part", b("$?\r\n;2\r\n\r\n\r\n;0\r\n"), [R("\r\n")]],
  ["empty streamed string", b("$?\r\n;0\r\n"), [R("")]],
  ["streamed string splits a UTF-8 character", cat("$?\r\n;1\r\n", [0xe2], "\r\n;2\r\n", [0x82, 0xac], "\r\n;0\r\n"), [
    R("€"),
  ]],
  ["streamed string inside an array", b("*2\r\n$?\r\n;1\r\na\r\n;0\r\n:1\r\n"), [R(["a", 1])]],
  ["streamed array", b("*?\r\n:1\r\n:2\r\n:3\r\n.\r\n"), [R([1, 2, 3])]],
  ["empty streamed array", b("*?\r\n.\r\n"), [R([])]],
  ["streamed map", b("%?\r\n+a\r\n:1\r\n+b\r\n:2\r\n.\r\n"), [R(map([["a", 1], ["b", 2]]))]],
  ["streamed set", b("~?\r\n+a\r\n.\r\n"), [R(["a"])]],
  ["streamed push", b(">?\r\n+a\r\n.\r\n"), [P(["a"])]],
  ["streamed attribute", b("|?\r\n+a\r\n:1\r\n.\r\n:5\r\n"), [R(5, map([["a", 1]]))]],
  ["streamed aggregates nested", b("*?\r\n*?\r\n:1\r\n.\r\n*1\r\n*?\r\n.\r\n.\r\n"), [R([[1], [[]]])]],
  ["many replies in one stream", b("+a\r\n:1\r\n$1\r\nb\r\n*1\r\n:2\r\n"), [R("a"), R(1), R("b"), R([2])]],
  ["streamed array at its exact length limit", b("*?\r\n:1\r\n:2\r\n.\r\n"), [R([1, 2])], { maxAggregateLength: 2 }],
  ["bulk at its exact length limit", b("$4\r\nabcd\r\n"), [R("abcd")], { maxBulkBytes: 4 }],
  ["streamed string at its exact length limit", b("$?\r\n;2\r\nab\r\n;2\r\ncd\r\n;0\r\n"), [R("abcd")], {
    maxBulkBytes: 4,
  }],
  ["nesting at its exact depth limit", b("*1\r\n*1\r\n*0\r\n"), [R([[[]]])], { maxDepth: 3 }],
  ["line of exactly 65536 bytes before CR", b(`+${"a".repeat(65535)}\r\n`), [R("a".repeat(65535))]],
  ["simple string at its exact maxBulkBytes", b(`+${"a".repeat(70000)}\r\n`), [R("a".repeat(70000))], {
    maxBulkBytes: 70000,
  }],
  ["a tight maxBulkBytes still lets text lines of 65,535 bytes through", b(`-${"e".repeat(65535)}\r\n`), [
    R(err("e".repeat(65535))),
  ], { maxBulkBytes: 4 }],
];

/** Malformed streams: each must be a ProtocolError at the given offset, however it is split. */
const malformed: [name: string, input: Uint8Array, offset: number, options?: DecoderOptions][] = [
  ["unknown type byte", b("?abc\r\n"), 0],
  ["unknown type byte after a reply", b("+OK\r\nx"), 5],
  ["NUL type byte", bytes(0), 0],
  ["bulk length over maxBulkBytes, refused on its digits", b("$9999999999999\r\n"), 9],
  ["bulk header alone is enough to refuse", b("$9999999999"), 9],
  ["bulk length over a custom maxBulkBytes", b("$11\r\nhello world\r\n"), 2, { maxBulkBytes: 10 }],
  ["one digit over a custom maxBulkBytes", b("$5\r\nhello\r\n"), 1, { maxBulkBytes: 4 }],
  ["array length over maxAggregateLength", b("*5000000000\r\n"), 10],
  ["map length over a custom maxAggregateLength", b("%3\r\n"), 1, { maxAggregateLength: 2 }],
  ["negative bulk length other than -1", b("$-2\r\n"), 2],
  ["-10 is not -1", b("$-10\r\n"), 3],
  ["non-digit in bulk length", b("$abc\r\n"), 1],
  ["non-digit after bulk length digits", b("$5x\r\nhello\r\n"), 2],
  ["empty bulk length", b("$\r\n"), 1],
  ["leading zero in length", b("$01\r\na\r\n"), 2],
  ["bare LF after length", b("$1\na\r\n"), 2],
  ["CR without LF after length", b("$1\rxa\r\n"), 3],
  ["payload longer than declared", b("$3\r\nabcd\r\n"), 7],
  ["payload CR not followed by LF", b("$3\r\nabc\rX"), 8],
  ["payload followed by CR CR", b("$3\r\nabc\r\r"), 8],
  ["null map is not RESP", b("%-1\r\n"), 1],
  ["null push is not RESP", b(">-1\r\n"), 1],
  ["null verbatim is not RESP", b("=-1\r\n"), 1],
  ["streamed verbatim is not RESP", b("=?\r\n"), 1],
  ["-2 array length", b("*-2\r\n"), 2],
  ["? then garbage", b("*?x\r\n"), 2],
  ["bare LF ends a simple string", b("+OK\n+OK\r\n"), 3],
  ["CR not followed by LF in a simple string", b("+OK\rX\r\n"), 4],
  ["bare LF in a long simple string", b(`+${"a".repeat(100)}\n${"b".repeat(100)}\r\n`), 101],
  ["simple string longer than maxBulkBytes", b(`+${"a".repeat(70001)}`), 70001, { maxBulkBytes: 70000 }],
  ["error too long even though it ends later", b(`-${"a".repeat(70001)}\r\n`), 70001, { maxBulkBytes: 70000 }],
  ["double line longer than 64 KiB", b(`,${"1".repeat(70000)}\r\n`), 65536],
  ["big number line longer than 64 KiB", b(`(${"1".repeat(70000)}\r\n`), 65536],
  ["text line past 65,535 bytes under a tight maxBulkBytes", b(`+${"a".repeat(65536)}\r\n`), 65536, {
    maxBulkBytes: 4,
  }],
  ["integer line longer than 64 KiB", b(`:${"1".repeat(70000)}\r\n`), 65536],
  ["integer with no digits", b(":\r\n"), 1],
  ["integer sign with no digits", b(":-\r\n"), 2],
  ["integer with a letter", b(":12a\r\n"), 3],
  ["integer with a space", b(": 1\r\n"), 1],
  ["integer bare LF", b(":1\n"), 2],
  ["boolean other than t or f", b("#x\r\n"), 1],
  ["boolean with two letters", b("#tt\r\n"), 2],
  ["boolean with no letter", b("#\r\n"), 1],
  ["null with content", b("_x\r\n"), 1],
  ["double not a number", b(",abc\r\n"), 1],
  ["double empty", b(",\r\n"), 1],
  ["double infinity spelled out (no server prints it)", b(",Infinity\r\n"), 4],
  ["double with two dots, at the second", b(",1.2.3\r\n"), 4],
  ["double exponent without digits", b(",1e\r\n"), 3],
  ["double exponent sign without digits", b(",1e+\r\n"), 4],
  ["double sign alone", b(",+\r\n"), 2],
  ["double dot alone", b(",.\r\n"), 2],
  ["double with a comma", b(",1,5\r\n"), 2],
  ["double with a trailing letter", b(",3.14x\r\n"), 5],
  ["double with a NUL byte", cat(",1", [0], "\r\n"), 2],
  ["double inf with a letter more", b(",inff\r\n"), 4],
  ["double cut-off inf", b(",in\r\n"), 3],
  ["double nan( never closed", b(",nan(0x7ff\r\n"), 10],
  ["double nan( with a space inside", b(",nan(a b)\r\n"), 6],
  ["double exponent alone", b(",e5\r\n"), 1],
  ["integer one above int64 max", b(":9223372036854775808\r\n"), 1],
  ["integer one below int64 min", b(":-9223372036854775809\r\n"), 2],
  ["integer 2^64", b(":18446744073709551616\r\n"), 1],
  ["integer with a NUL byte", cat(":1", [0], "\r\n"), 2],
  ["length with a NUL byte", cat("$1", [0], "\r\na\r\n"), 2],
  ["a protocol error inside an open aggregate", b("*3\r\n:1\r\n*2\r\n+a\r\n#x\r\n"), 17],
  ["a protocol error inside an open map, between key and value", b("%1\r\n+k\r\n?\r\n"), 8],
  ["big number with a letter", b("(12a\r\n"), 3],
  ["big number empty", b("(\r\n"), 1],
  ["big number sign only", b("(-\r\n"), 2],
  ["verbatim shorter than its prefix", b("=3\r\ntxt\r\n"), 4],
  ["verbatim without a colon after 3 bytes", b("=5\r\ntxt;x\r\n"), 7],
  ["streamed string part outside a streamed string", b(";3\r\nabc\r\n"), 0],
  ["streamed string interrupted by another type", b("$?\r\n;1\r\na\r\n:1\r\n"), 11],
  ["streamed string part with a bad CRLF", b("$?\r\n;1\r\naXX"), 9],
  ["streamed string longer than maxBulkBytes", b("$?\r\n;3\r\nabc\r\n;3\r\ndef\r\n"), 13, { maxBulkBytes: 4 }],
  ["end outside any aggregate", b(".\r\n"), 0],
  ["end inside a counted array", b("*2\r\n:1\r\n.\r\n"), 8],
  ["end between a map key and its value", b("%?\r\n+k\r\n.\r\n"), 8],
  ["end with content", b("*?\r\n.x\r\n"), 5],
  ["streamed array longer than maxAggregateLength", b("*?\r\n:1\r\n:2\r\n:3\r\n"), 0, { maxAggregateLength: 2 }],
  ["nested streamed map longer than maxAggregateLength", b("*1\r\n%?\r\n+a\r\n:1\r\n+b\r\n:2\r\n"), 4, {
    maxAggregateLength: 1,
  }],
  ["nesting deeper than maxDepth", b("*1\r\n*1\r\n*1\r\n:1\r\n"), 8, { maxDepth: 2 }],
  ["empty aggregate still counts for depth", b("*1\r\n%0\r\n"), 4, { maxDepth: 1 }],
  ["nested attribute counts for depth", b("*1\r\n|0\r\n:1\r\n"), 4, { maxDepth: 1 }],
];

const vectors = suite("Decoder vectors");

for (const [name, input, expected, options] of valid) {
  vectors(`decodes ${name} whole, byte by byte and split anywhere`, () => {
    decodesTo(input, expected, options);
  });
}

for (const [name, input, offset, options] of malformed) {
  vectors(`refuses ${name} at byte ${offset}, however split`, () => {
    refuses(input, offset, options);
  });
}

vectors.run();

const stream = suite("Decoder stream");

stream("decodes every valid vector back to back in one stream, at random chunk sizes", () => {
  // An input that ends on an attribute would annotate the next one's reply.
  const plain = valid.filter(([, , events, options]) => options === undefined && events.length > 0);
  const input = cat(...plain.map(([, bytes]) => bytes));
  const expected = plain.flatMap(([, , events]) => events);
  const random = randomStream(7);
  for (let round = 0; round < 200; round++) {
    const { decoder, events } = recorder();
    let at = 0;
    while (at < input.length) {
      const size = 1 + Math.floor(random() * (round % 2 === 0 ? 8 : 300));
      decoder.feed(input.slice(at, at + size));
      at += size;
    }
    check(events, expected, `round ${round}`);
  }
});

stream("round-trips random reply trees in random chunks", () => {
  const random = randomStream(20240611);
  for (let round = 0; round < 300; round++) {
    const replies: Reply[] = [];
    for (let i = 0; i < 5; i++) replies.push(randomReply(random));
    const input = cat(...replies.map(encodeReply));
    const { decoder, events } = recorder();
    let at = 0;
    while (at < input.length) {
      const size = 1 + Math.floor(random() * (random() < 0.5 ? 5 : 4000));
      decoder.feed(input.subarray(at, at + size));
      at += size;
    }
    check(events, replies.map((r) => R(r)), `round ${round}`);
  }
});

stream("offsets count from the start of the stream across many chunks", () => {
  const { decoder } = recorder();
  const ok = b("+OK\r\n".repeat(1000));
  decoder.feed(ok);
  decoder.feed(b("$3\r\nab"));
  try {
    decoder.feed(b("cXX"));
    assert.unreachable("should throw");
  } catch (e) {
    assert.instance(e, ProtocolError);
    assert.is((e as ProtocolError).offset, 5000 + 7);
    assert.match((e as ProtocolError).message, /expected CR after the payload at byte offset 5007/);
  }
});

stream("a large bulk split across 1,000 chunks is decoded exactly", () => {
  const payload = Buffer.alloc(1 << 20);
  for (let i = 0; i < payload.length; i++) payload[i] = 97 + (i % 26);
  const input = cat(`$${payload.length}\r\n`, payload, "\r\n+after\r\n");
  const { decoder, events } = recorder();
  const size = Math.ceil(input.length / 1000);
  for (let at = 0; at < input.length; at += size) decoder.feed(input.subarray(at, at + size));
  assert.is(events.length, 2);
  assert.is((events[0] as { reply: string }).reply, payload.toString("latin1"));
  check([events[1]!], [R("after")]);
});

stream("empty chunks change nothing", () => {
  const { decoder, events } = recorder();
  decoder.feed(new Uint8Array(0));
  decoder.feed(b("$3\r\na"));
  decoder.feed(new Uint8Array(0));
  decoder.feed(b("bc\r\n"));
  check(events, [R("abc")]);
});

stream("accepts a Uint8Array view into a larger buffer", () => {
  const backing = b("XXXX+OK\r\nYYYY");
  const { decoder, events } = recorder();
  decoder.feed(backing.subarray(4, 9));
  check(events, [R("OK")]);
});

stream.run();

const memory = suite("Decoder memory");

const MiB = 1 << 20;

memory("a declared length is not allocated before its bytes arrive", () => {
  // Each header is legal (under the default maxBulkBytes of 512 MiB) and
  // costs a hostile server a few bytes; allocating what they declare would
  // take 2.5 GiB.
  const n = 536870000;
  const heads: [head: string, buffers: boolean][] = [
    [`$${n}\r\n`, false],
    [`$${n}\r\n`, true],
    [`=${n}\r\ntxt:`, true],
    [`!${n}\r\nERR `, false],
    [`$?\r\n;${n}\r\n`, true],
  ];
  const inputs = heads.map(([head]) => b(`${head}abc`));
  const before = offHeap();
  const held = heads.map(([, buffers], i) => {
    const { decoder, events } = recorder();
    decoder.buffers = buffers;
    decoder.feed(inputs[i]!);
    return { decoder, events };
  });
  const grown = offHeap() - before;
  assert.ok(grown < 16 * MiB, `${held.length} pending payloads hold ${(grown / MiB).toFixed(1)} MiB`);
  for (const { events } of held) assert.is(events.length, 0);
});

memory("a payload cut across chunks holds memory in proportion to the bytes received", () => {
  const received = 8 * MiB;
  const input = cat("$536870000\r\n", new Uint8Array(received).fill(97));
  for (const buffers of [false, true]) {
    const before = offHeap();
    const { decoder, events } = recorder();
    decoder.buffers = buffers;
    for (let at = 0; at < input.length; at += 65536) decoder.feed(input.subarray(at, at + 65536));
    const grown = offHeap() - before;
    // The live buffer is at most twice what arrived; the rest is outgrown
    // buffers not yet collected (half of the live one, at most).
    assert.ok(
      grown < 3 * received,
      `buffers ${buffers}: ${(grown / MiB).toFixed(1)} MiB held after ${received / MiB} MiB received`,
    );
    assert.is(events.length, 0);
  }
});

memory("payloads grown across chunks decode exactly in every type and mode, as copies", () => {
  const payload = new Uint8Array(300_000).map((_, i) => (i * 7) & 0xff);
  const text = Buffer.from(payload).toString("utf8");
  const cases: [name: string, input: Uint8Array, buffers: boolean, expected: Reply][] = [
    ["bulk", cat(`$${payload.length}\r\n`, payload, "\r\n"), false, text],
    ["bulk, buffers mode", cat(`$${payload.length}\r\n`, payload, "\r\n"), true, payload],
    ["verbatim, buffers mode", cat(`=${payload.length + 4}\r\ntxt:`, payload, "\r\n"), true, payload],
    ["verbatim", cat(`=${payload.length + 4}\r\ntxt:`, payload, "\r\n"), false, text],
    ["blob error", cat(`!${payload.length + 4}\r\nERR `, payload, "\r\n"), true, err(`ERR ${text}`)],
    [
      "streamed parts, buffers mode",
      cat(`$?\r\n;${payload.length}\r\n`, payload, `\r\n;3\r\nxyz\r\n;0\r\n`),
      true,
      cat(payload, "xyz"),
    ],
  ];
  for (const [name, input, buffers, expected] of cases) {
    for (const size of [1, 1000, 70_001, input.length]) {
      const { decoder, events } = recorder();
      decoder.buffers = buffers;
      feedThroughScratch(decoder, input, size);
      check(events, [R(expected)], `${name}, chunk ${size}`);
      const got = (events[0] as { reply: Reply }).reply;
      if (got instanceof Uint8Array) {
        assert.is(got.constructor, Uint8Array, `${name}, chunk ${size}`);
        assert.ok(got.buffer.byteLength <= got.length + 4, `${name}, chunk ${size}: no slack kept from growing`);
      }
    }
  }
});

memory.run();

const deep = suite("Decoder depth");

deep("decodes 50,000 nested arrays without recursion when maxDepth allows", () => {
  const n = 50000;
  const input = cat(b("*1\r\n".repeat(n)), b(":1\r\n"));
  for (const chunkSize of [input.length, 1, 7, 4096]) {
    const { decoder, events } = recorder({ maxDepth: n });
    for (let at = 0; at < input.length; at += chunkSize) decoder.feed(input.subarray(at, at + chunkSize));
    assert.is(events.length, 1);
    let v = (events[0] as { reply: Reply }).reply;
    let depth = 0;
    while (Array.isArray(v)) {
      assert.is(v.length, 1);
      v = v[0]!;
      depth++;
    }
    assert.is(depth, n);
    assert.is(v, 1);
  }
});

deep("decodes 50,000 nested streamed maps closing at once", () => {
  const n = 50000;
  const input = cat(b("%?\r\n+k\r\n".repeat(n)), b(":1\r\n"), b(".\r\n".repeat(n)), b("+next\r\n"));
  const { decoder, events } = recorder({ maxDepth: n });
  decoder.feed(input);
  assert.is(events.length, 2);
  check([events[1]!], [R("next")]);
});

deep("refuses 50,000 nested arrays at the default maxDepth with a ProtocolError, not a stack overflow", () => {
  const input = cat(b("*1\r\n".repeat(50000)), b(":1\r\n"));
  const { decoder } = recorder();
  try {
    decoder.feed(input);
    assert.unreachable("should throw");
  } catch (e) {
    assert.ok(isProtocolError(e), String(e));
    assert.is((e as ProtocolError).offset, 10000 * 4);
    assert.match((e as ProtocolError).message, /nested deeper than 10000/);
  }
});

deep.run();

const values = suite("Decoder values");

values("a map with a __proto__ key gets an own property and no prototype pollution", () => {
  const input = b("%2\r\n$9\r\n__proto__\r\n%1\r\n$8\r\npolluted\r\n#t\r\n+constructor\r\n+x\r\n");
  const { decoder, events } = recorder();
  decoder.feed(input);
  const value = (events[0] as { reply: Record<string, unknown> }).reply;
  assert.is(Object.getPrototypeOf(value), null);
  assert.ok(Object.prototype.hasOwnProperty.call(value, "__proto__"));
  assert.equal(Object.keys(value), ["__proto__", "constructor"]);
  const inner = value["__proto__"] as Record<string, unknown>;
  assert.is(Object.getPrototypeOf(inner), null);
  assert.is(inner["polluted"], true);
  assert.is(({} as Record<string, unknown>)["polluted"], undefined);
  assert.is((Object.prototype as Record<string, unknown>)["polluted"], undefined);
});

values("doubles keep -0, NaN and infinities", () => {
  const got: Reply[] = [];
  const d = new Decoder({ reply: (v) => got.push(v), push: () => {} });
  d.feed(b(",-0\r\n,nan\r\n,inf\r\n,-inf\r\n,1e308\r\n,4.9e-324\r\n"));
  assert.ok(Object.is(got[0], -0));
  assert.ok(Number.isNaN(got[1]));
  assert.is(got[2], Infinity);
  assert.is(got[3], -Infinity);
  assert.is(got[4], 1e308);
  assert.is(got[5], 5e-324);
});

values("integers are numbers up to 2^53 - 1 and exact bigints beyond", () => {
  const cases: [string, number | bigint][] = [
    ["9007199254740991", MAX],
    ["9007199254740992", 2n ** 53n],
    ["9007199254740993", 2n ** 53n + 1n],
    ["-9007199254740993", -(2n ** 53n) - 1n],
    ["9223372036854775807", 2n ** 63n - 1n],
    ["-9223372036854775808", -(2n ** 63n)],
    ["1234567890123456", 1234567890123456],
  ];
  for (const [text, want] of cases) {
    const got: Reply[] = [];
    new Decoder({ reply: (v) => got.push(v), push: () => {} }).feed(b(`:${text}\r\n`));
    assert.is(typeof got[0], typeof want, text);
    assert.is(got[0], want, text);
  }
});

values("an error reply at top level is a RedisReplyError value with its code", () => {
  const got: Reply[] = [];
  new Decoder({ reply: (v) => got.push(v), push: () => {} }).feed(b("-WRONGTYPE Operation against a key\r\n"));
  assert.instance(got[0], RedisReplyError);
  assert.is((got[0] as RedisReplyError).code, "WRONGTYPE");
  assert.is((got[0] as RedisReplyError).message, "WRONGTYPE Operation against a key");
});

values("the attribute argument is undefined when no attribute came", () => {
  const seen: unknown[] = [];
  new Decoder({ reply: (_v, a) => seen.push(a), push: () => {} }).feed(b("+a\r\n|0\r\n+b\r\n+c\r\n"));
  assert.is(seen.length, 3);
  assert.is(seen[0], undefined);
  assert.is(Object.getPrototypeOf(seen[1]), null);
  assert.is(seen[2], undefined);
});

values.run();

const buffers = suite("Decoder buffers mode");

function binary(input: Uint8Array, chunkSize = input.length): Event[] {
  const { decoder, events } = recorder();
  decoder.buffers = true;
  for (let at = 0; at < input.length; at += chunkSize) decoder.feed(input.subarray(at, at + chunkSize));
  return events;
}

buffers("every bulk string in the tree is a plain Uint8Array; other types keep theirs", () => {
  const input = b("*5\r\n$2\r\nhi\r\n+simple\r\n:1\r\n*1\r\n$0\r\n\r\n=7\r\ntxt:abc\r\n");
  const expected = [R([bytes(104, 105), "simple", 1, [bytes()], bytes(97, 98, 99)])];
  for (const size of [input.length, 1, 3]) check(binary(input, size), expected, `chunk ${size}`);
});

buffers("map keys stay strings (read as UTF-8) while values are bytes", () => {
  const input = b("%1\r\n$4\r\nkéy\r\n$1\r\nv\r\n");
  check(binary(input), [R(map([["kéy", bytes(118)]]))]);
});

buffers("bytes round trip exactly, invalid UTF-8 and CRLF included", () => {
  const raw = [0xff, 0xfe, 13, 10, 0, 0xc3, 0x28, 0x80];
  for (const size of [100, 1, 5]) {
    const events = binary(cat(`$${raw.length}\r\n`, raw, "\r\n"), size);
    check(events, [R(new Uint8Array(raw))], `chunk ${size}`);
  }
});

buffers("a streamed string is one Uint8Array", () => {
  check(binary(b("$?\r\n;2\r\nab\r\n;1\r\nc\r\n;0\r\n"), 3), [R(bytes(97, 98, 99))]);
  check(binary(b("$?\r\n;0\r\n")), [R(bytes())]);
});

buffers("blob errors stay RedisReplyError values", () => {
  check(binary(b("!5\r\nERR x\r\n")), [R(err("ERR x"))]);
  check(binary(b("!5\r\nERR x\r\n"), 2), [R(err("ERR x"))]);
});

buffers("values are copies: mutating or reusing the fed chunk changes nothing", () => {
  for (const size of [1000, 1, 4]) {
    const input = b("*2\r\n$5\r\nhello\r\n=8\r\ntxt:abcd\r\n$?\r\n;2\r\nxy\r\n;0\r\n");
    const { decoder, events } = recorder();
    decoder.buffers = true;
    feedThroughScratch(decoder, input, size);
    input.fill(0x21);
    check(events, [R([bytes(104, 101, 108, 108, 111), bytes(97, 98, 99, 100)]), R(bytes(120, 121))], `chunk ${size}`);
    const first = (events[0] as { reply: Reply[] }).reply[0] as Uint8Array;
    assert.is(first.constructor, Uint8Array);
    assert.ok(first.buffer.byteLength < 64, "no view into a large shared buffer");
  }
});

buffers("a large bulk split across chunks arrives as one Uint8Array", () => {
  const payload = new Uint8Array(100000).map((_, i) => i & 0xff);
  const events = binary(cat(`$${payload.length}\r\n`, payload, "\r\n"), 777);
  const got = (events[0] as { reply: Uint8Array }).reply;
  assert.is(got.constructor, Uint8Array);
  assert.is(got.length, payload.length);
  assert.ok(Buffer.from(got).equals(Buffer.from(payload)));
});

buffers("the mode is read per top-level reply, so a reply handler can set it for the next one", () => {
  const modes = [true, false, true];
  const got: Reply[] = [];
  const decoder = new Decoder({
    reply(value) {
      got.push(value);
      decoder.buffers = modes[got.length] ?? false;
    },
    push() {},
  });
  decoder.buffers = modes[0]!;
  const input = b("$1\r\na\r\n*1\r\n$1\r\nb\r\n|1\r\n+k\r\n$1\r\nv\r\n$1\r\nc\r\n");
  for (let at = 0; at < input.length; at++) decoder.feed(input.subarray(at, at + 1));
  check(got.map((v) => R(v)), [R(bytes(97)), R(["b"]), R(bytes(99))]);
});

buffers("pushes follow pushBuffers, not buffers", () => {
  const { decoder, events } = recorder();
  decoder.buffers = true;
  decoder.feed(b(">2\r\n$1\r\np\r\n$1\r\nq\r\n$1\r\nr\r\n"));
  decoder.pushBuffers = true;
  decoder.buffers = false;
  decoder.feed(b(">1\r\n$1\r\np\r\n$1\r\nr\r\n"));
  check(events, [P(["p", "q"]), R(bytes(114)), P([bytes(112)]), R("r")]);
});

buffers.run();

const failures = suite("Decoder failures");

failures("an exception from a handler propagates and stops the decoder", () => {
  const boom = new Error("handler bug");
  let calls = 0;
  const decoder = new Decoder({
    reply() {
      calls++;
      throw boom;
    },
    push() {},
  });
  assert.throws(() => decoder.feed(b("+a\r\n+b\r\n")), (e: unknown) => e === boom);
  assert.throws(() => decoder.feed(b("+c\r\n")), (e: unknown) => e === boom);
  assert.is(calls, 1);
});

failures("feed() called from inside a handler is refused", () => {
  const decoder: Decoder = new Decoder({
    reply() {
      decoder.feed(b("+x\r\n"));
    },
    push() {},
  });
  assert.throws(() => decoder.feed(b("+a\r\n")), /called again from inside a handler/);
});

failures("replies before a malformed frame in the same chunk are delivered", () => {
  const { decoder, events } = recorder();
  assert.throws(() => decoder.feed(b("+a\r\n:1\r\n?")), (e: unknown) => isProtocolError(e));
  check(events, [R("a"), R(1)]);
});

failures("the error message names the problem and the offset", () => {
  const { decoder } = recorder();
  try {
    decoder.feed(b("#x\r\n"));
    assert.unreachable("should throw");
  } catch (e) {
    assert.is((e as Error).message, "Invalid RESP: boolean must be 't' or 'f' at byte offset 1");
    assert.is((e as Error).name, "ProtocolError");
  }
});

failures("options are validated up front with the setting in the message", () => {
  const handlers = { reply() {}, push() {} };
  assert.throws(
    () => new Decoder(handlers, { maxDepth: 0 }),
    (e: unknown) =>
      e instanceof RangeError && e.message === "Cannot create Decoder: 'maxDepth' must be a positive integer, got 0",
  );
  assert.throws(
    () => new Decoder(handlers, { maxBulkBytes: 1.5 }),
    (e: unknown) =>
      e instanceof RangeError &&
      e.message === "Cannot create Decoder: 'maxBulkBytes' must be an integer in 0..9007199254740991, got 1.5",
  );
  assert.throws(
    () => new Decoder(handlers, { maxAggregateLength: -1 }),
    (e: unknown) =>
      e instanceof RangeError &&
      e.message === "Cannot create Decoder: 'maxAggregateLength' must be an integer in 0..9007199254740991, got -1",
  );
  // A cap beyond 2^53 would let a length header grow digit by digit without end.
  assert.throws(
    () => new Decoder(handlers, { maxBulkBytes: 2 ** 60 }),
    (e: unknown) =>
      e instanceof RangeError && e.message.includes("'maxBulkBytes' must be an integer in 0..9007199254740991"),
  );
});

failures("comparable() itself tells bigint from number and -0 from 0", () => {
  assert.not.equal(comparable(1), comparable(1n));
  assert.not.equal(comparable(-0), comparable(0));
  assert.not.equal(comparable(bytes(1)), comparable(Buffer.from([1])));
});

failures.run();
