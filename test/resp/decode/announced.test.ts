/** Decoder: the header of a large reply payload is announced before its bytes, and only then. */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Decoder } from "../../../resp/decode/mod.ts";
import type { Reply } from "../../../resp/types.ts";

const MiB = 1024 * 1024;
const text = (s: string) => new TextEncoder().encode(s);

function decoder() {
  const seen: (string | number)[] = [];
  const d = new Decoder({
    reply: (value: Reply) =>
      seen.push(Array.isArray(value) ? `reply array of ${value.length}` : `reply ${(value as string).length}`),
    push: (value: Reply[]) => seen.push(`push ${String(value[0])}`),
    announced: (length) => seen.push(length),
  });
  return { d, seen };
}

const test = suite("Decoder: announced payloads");

test("a bulk of 1 MiB or more is announced once, when its header arrives, before its bytes", () => {
  const { d, seen } = decoder();
  d.feed(text(`$${MiB}\r\nabc`));
  assert.equal(seen, [MiB]);
  d.feed(text("x".repeat(MiB - 3)));
  assert.equal(seen, [MiB]);
  d.feed(text("\r\n"));
  assert.equal(seen, [MiB, `reply ${MiB}`]);
});

test("inside an aggregate each large payload is announced; a header split across chunks too", () => {
  const { d, seen } = decoder();
  d.feed(text(`*3\r\n$${2 * MiB}\r\n`));
  d.feed(text("y".repeat(2 * MiB) + "\r\n$3\r\nabc\r\n$" + String(MiB).slice(0, 3)));
  d.feed(text(String(MiB).slice(3) + "\r\n"));
  d.feed(text("z".repeat(MiB) + "\r\n"));
  assert.equal(seen, [2 * MiB, MiB, "reply array of 3"]);
});

test("nothing is announced under 1 MiB, for a payload whole in its chunk, or for a push", () => {
  const { d, seen } = decoder();
  d.feed(text(`$${MiB - 1}\r\n`));
  d.feed(text("a".repeat(MiB - 1) + "\r\n"));
  d.feed(text(`$${MiB}\r\n${"b".repeat(MiB)}\r\n`));
  d.feed(text(`>2\r\n$7\r\nmessage\r\n$${MiB}\r\n`));
  d.feed(text("c".repeat(MiB) + "\r\n"));
  assert.equal(seen, [`reply ${MiB - 1}`, `reply ${MiB}`, "push message"]);
});

test.run();
