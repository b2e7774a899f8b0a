/**
 * The stored format (`hl3;`): what a value's windows, ids, tags and payload
 * look like in Redis, and everything else refused with a reason.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { decodeEnvelope, encodeEnvelope } from "../../../../strategies/pipeline/read/envelope.ts";
import { rejects } from "../../../support/assert.ts";

const Envelope = suite("envelope");

const FIELDS = {
  negative: false,
  freshMs: 3,
  staleMs: 5,
  ifErrorMs: 7,
  loadMs: 11,
  id: "id-1",
  epoch: "ep0ch",
  codec: "json",
  etag: undefined,
  tags: [] as string[],
  tagVersions: [] as string[],
};

Envelope("the envelope round-trips windows, ids, tags and payload, as text and as bytes", () => {
  const text = encodeEnvelope(FIELDS, `{"a":1}`);
  assert.is(text, `hl3;v;0000000000000;3;5;7;0000011;id-1;ep0ch;json;;;{"a":1}`);
  assert.equal(decodeEnvelope(text), { ...FIELDS, publishedAt: 0, payload: `{"a":1}` });
  const bytes = encodeEnvelope(FIELDS, new Uint8Array([0, 13, 10, 255]));
  assert.instance(bytes, Uint8Array);
  const back = decodeEnvelope(bytes);
  assert.equal([...(back.payload as Uint8Array)], [0, 13, 10, 255]);
  // Tag names are percent-encoded, so any string is a tag.
  const tagged = { ...FIELDS, tags: ["user:1", "a,b=c;d", "é"], tagVersions: ["v1", "v2", "v3"] };
  const withTags = encodeEnvelope(tagged, "x") as string;
  assert.is(withTags, "hl3;v;0000000000000;3;5;7;0000011;id-1;ep0ch;json;;user%3A1=v1,a%2Cb%3Dc%3Bd=v2,%C3%A9=v3;x");
  assert.equal(decodeEnvelope(withTags), { ...tagged, publishedAt: 0, payload: "x" });
  assert.equal(decodeEnvelope(new TextEncoder().encode(withTags)).tags, tagged.tags);
  // An etag is percent-encoded, so any string is an etag.
  const withEtag = encodeEnvelope({ ...FIELDS, etag: 'W/"a;b"' }, "x") as string;
  assert.is(withEtag, "hl3;v;0000000000000;3;5;7;0000011;id-1;ep0ch;json;W%2F%22a%3Bb%22;;x");
  assert.is(decodeEnvelope(withEtag).etag, 'W/"a;b"');
  assert.is(decodeEnvelope(new TextEncoder().encode(withEtag)).etag, 'W/"a;b"');
  // The server's stamp replaces the placeholder in place.
  const stamped = "hl3;n;1764547200123;0;0;0;3;id;e;json;;;";
  assert.equal(decodeEnvelope(stamped), {
    negative: true,
    publishedAt: 1764547200123,
    freshMs: 0,
    staleMs: 0,
    ifErrorMs: 0,
    loadMs: 3,
    id: "id",
    epoch: "e",
    codec: "json",
    etag: undefined,
    tags: [],
    tagVersions: [],
    payload: "",
  });
});

Envelope("anything that is not a version-3 envelope is refused with a reason, as text and as bytes", async () => {
  const bad = [
    "",
    "garbage",
    "hl3;x;0000000000000;0;0;0;0;i;e;json;;;",
    "hl3;v;000000000000;0;0;0;0;i;e;json;;;",
    "hl3;v;00000000000000;0;0;0;0;i;e;json;;;",
    "hl3;v;0000000000000;-1;0;0;0;i;e;json;;;",
    "hl3;v;0000000000000;0;0;0;i;e;json;;;",
    "hl3;v;0000000000000;1e3;0;0;0;i;e;json;;;",
    "hl3;v;0000000000000;0;0;0;1234567890123456;i;e;json;;;x",
    "hl3;v;0000000000000;0;0;0;0;;e;json;;;x",
    "hl3;v;0000000000000;0;0;0;0;i;e;;;;x",
    "hl3;v;0000000000000;0;0;0;0;i;e;json;;notag;x",
    "hl3;v;0000000000000;0;0;0;0;i;e;json",
    `hl3;v;0000000000000;0;0;0;0;${"i".repeat(65)};e;json;;;x`,
    `hl3;v;0000000000000;0;0;0;0;i;e;${"c".repeat(65)};;;x`,
    "hl3",
  ];
  for (const raw of bad) {
    // The message quotes the start of what it found: the RegExp leaves that part out.
    await rejects(() => decodeEnvelope(raw), Error, /^not a herdless envelope \(starts with ".*"\)$/);
    await rejects(
      () => decodeEnvelope(new TextEncoder().encode(raw)),
      Error,
      /^not a herdless envelope \(starts with ".*"\)$/,
    );
  }
  // An entry of an older format is a miss for this version, said as such.
  for (const raw of ['hl1;v;0;0;0;"version 1"', "hl2;v;0000000000000;3;5;7;0000011;id-1;ep0ch;;1"]) {
    await rejects(
      () => decodeEnvelope(raw),
      Error,
      /^an envelope of another format \("hl\d;"; this version reads "hl3;"\)$/,
    );
  }
  await rejects(
    () => decodeEnvelope("garbage with a long tail"),
    Error,
    `not a herdless envelope (starts with "garbage with")`,
  );
  await rejects(
    () => decodeEnvelope(new Uint8Array([0xff, 0, 104])),
    Error,
    `not a herdless envelope (starts with "\u00ff\\u0000h")`,
  );
  // 15 digits is the widest field, read exactly.
  assert.equal(decodeEnvelope("hl3;v;0000000000000;0;999999999999999;0;7;i;e;json;;;x").staleMs, 999_999_999_999_999);
  await rejects(
    () => decodeEnvelope("hl3;n;0000000000000;0;0;0;0;i;e;json;;;x"),
    Error,
    "a not-found marker carries a payload",
  );
  await rejects(
    () => encodeEnvelope(FIELDS, 5 as never),
    TypeError,
    "the codec's encode must return a string or a Uint8Array, got number",
  );
});

Envelope.run();
