import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connect } from "../../resp/client.ts";
import { TimeoutError } from "../../resp/errors.ts";
import { rejects, until } from "../support/assert.ts";
import { startFakeServer } from "../support/fake-server.ts";

const test = suite("RedisClient: a reply that never ends after its command timed out");

test("the connection is reset once the timed-out reply is overdue, so decoding cannot grow forever", async () => {
  // Connection 0 answers with an aggregate that announces 100 million items
  // and streams them slowly for ever; later connections answer normally.
  const fake = await startFakeServer((command, info) =>
    info.connection === 0 && command[0] === "GET"
      ? { write: "*100000000\r\n" }
      : info.connection === 0
      ? { stream: ":1\r\n".repeat(64), count: 1_000_000 }
      : { write: "+PONG\r\n" }
  );
  const redis = await connect({ url: fake.url, reconnect: { minMs: 10, maxMs: 20 } });
  try {
    const get = redis.send(["GET", "endless"], { timeoutMs: 100 });
    // The stream keeps bytes arriving on the same connection.
    void redis.send(["ECHO", "feed"]).catch(() => {});
    await rejects(() => get, TimeoutError, /^Command GET timed out after \d+ ms$/);
    // Without the reset the first connection would stay open, decoding for ever.
    await until(() => fake.connections >= 2, 10_000);
    await until(() => redis.connected, 10_000);
    assert.is(await redis.send(["PING"]), "PONG");
  } finally {
    redis.destroy();
    await fake.close();
  }
});

test.run();
