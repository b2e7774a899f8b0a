/**
 * The publishing script against a real redis-server: it stamps the server's
 * `TIME` and, given when the load began, raises the envelope's `loadMs` in
 * place so that `publishedAt - loadMs` is that moment however late the
 * write arrived.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { decodeEnvelope, encodeEnvelope, loadMsOffset } from "../../../../strategies/pipeline/read/envelope.ts";
import { writePublication as publish } from "../../../../strategies/pipeline/fill/publish_script.ts";
import { useRedis } from "../../../support/fixture.ts";
import { serverMs } from "../../../support/strategies.ts";

const test = suite("publication script");
const db = useRedis(test, { prefix: "scripts" });

const encoder = new TextEncoder();

const FIELDS = {
  negative: false,
  freshMs: 60_000,
  staleMs: 0,
  ifErrorMs: 0,
  loadMs: 12,
  id: "id",
  epoch: "e",
  codec: "json",
  etag: undefined,
  tags: [],
  tagVersions: [],
};

// Whole ms, as the script's own clock reads.
const serverNow = async () => Math.floor(await serverMs(db.redis));

/** Publish an envelope of `fields` (loadMs from `began`) and `payload`, and read it back, checking it was rewritten in place. */
async function published(
  key: string,
  began?: { at: number; loadMs: number; offset: number },
  fields: Parameters<typeof encodeEnvelope>[0] = FIELDS,
  payload: string | Uint8Array = "payload",
) {
  const envelope = encodeEnvelope(began === undefined ? fields : { ...fields, loadMs: began.loadMs }, payload);
  assert.ok(
    await publish(db.redis, {
      key,
      lease: `${key}:lease`,
      mode: "plain",
      envelope,
      px: 60_000,
      channel: "",
      ...(began === undefined ? {} : { began }),
    }),
  );
  const raw = await db.redis.send(["GET", key], { buffers: typeof payload !== "string" }) as string | Uint8Array;
  const back = decodeEnvelope(raw);
  assert.equal(back.payload, payload, "the payload is untouched");
  assert.is(raw.length, envelope.length, "rewritten in place");
  return back;
}

test("a write that arrives a second after its load began: loadMs reaches back to that moment", async () => {
  const began = (await serverNow()) - 1000;
  const e = await published(`${db.ns()}:k`, { at: began, loadMs: 12, offset: loadMsOffset(FIELDS) });
  assert.ok(e.loadMs >= 1000, `loadMs ${e.loadMs}`);
  assert.is(e.publishedAt - e.loadMs, began);
});

test("a load that took longer than the server's clock says keeps its own duration", async () => {
  // The client's clock estimate may be off by half a round trip: never shorten what was measured.
  const began = (await serverNow()) + 60_000;
  const e = await published(`${db.ns()}:k`, {
    at: began,
    loadMs: 345,
    offset: loadMsOffset({ ...FIELDS, loadMs: 345 }),
  });
  assert.is(e.loadMs, 345);
});

test("without a load start (clock not measured yet, set() before) the duration stays as written", async () => {
  const e = await published(`${db.ns()}:k`);
  assert.is(e.loadMs, 12);
});

test("a load of hours is written unpadded, and the script leaves it", async () => {
  const fields = { ...FIELDS, loadMs: 12_345_678 };
  assert.is(loadMsOffset(fields), -1);
  const e = await published(`${db.ns()}:k`, { at: (await serverNow()) - 20_000_000, loadMs: 12_345_678, offset: -1 });
  assert.is(e.loadMs, 12_345_678);
});

test("a raise that would not fit the padded field stops at its widest", async () => {
  const e = await published(`${db.ns()}:k`, {
    at: (await serverNow()) - 20_000_000,
    loadMs: 12,
    offset: loadMsOffset(FIELDS),
  });
  assert.is(e.loadMs, 9_999_999);
});

test("a binary envelope with tags and a non-ASCII payload: the offset is a byte offset, the payload untouched", async () => {
  const fields = { ...FIELDS, tags: ["é,=;", "user:1"], tagVersions: ["v1", "v2"] };
  const began = (await serverNow()) - 1000;
  const offset = loadMsOffset(fields);
  const back = await published(`${db.ns()}:k`, { at: began, loadMs: 12, offset }, fields, encoder.encode("héllo ✓ 𝄞"));
  assert.is(back.publishedAt - back.loadMs, began);
  assert.equal(back.tags, fields.tags);
});

test.run();
