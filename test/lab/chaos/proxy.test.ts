import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { RedisClient } from "../../../mod.ts";
import { fanOut, type FaultProxy, startFaultProxy } from "../../../lab/chaos/proxy.ts";
import { until } from "../../support/assert.ts";
import { useRedis } from "../../support/fixture.ts";

const Proxy = suite("startFaultProxy()");
let proxy: FaultProxy;
let client: RedisClient;
const db = useRedis(Proxy, { clients: 0 });
Proxy.before(async () => {
  proxy = await startFaultProxy(db.server.port);
  client = await db.client({ url: proxy.url });
});
Proxy.after(async () => {
  await proxy?.close();
});

const turn = () => new Promise((r) => setImmediate(r));

Proxy("startFaultProxy() delivers every reply in order while its delay changes and across a stall", async () => {
  // Were a chunk overtaken (a delay lowered, a stall released), the server
  // would run the commands out of order and the client, which matches
  // replies by position, would see the echoes out of order.
  const steps: Record<number, () => void> = {
    50: () => proxy.delay(20),
    100: () => proxy.delay(0),
    150: () => proxy.stall(),
    200: () => proxy.resume(),
    230: () => proxy.delay(5),
    260: () => proxy.stall(),
    270: () => proxy.delay(0),
  };
  const replies: Promise<unknown>[] = [];
  for (let i = 0; i < 300; i++) {
    steps[i]?.();
    replies.push(client.send(["ECHO", String(i)]));
    if (i % 10 === 0) await turn(); // let the commands leave in several chunks
  }
  proxy.resume();
  assert.equal(await Promise.all(replies), Array.from({ length: 300 }, (_, i) => String(i)));
});

Proxy("startFaultProxy() drop() cuts every connection, and a new one passes again", async () => {
  assert.is(await client.send(["PING"]), "PONG");
  assert.is(proxy.connections, 1);
  proxy.drop();
  await until(() => proxy.connections === 0);
  // The client reconnects by itself, through the proxy.
  assert.is(await client.send(["PING"]), "PONG");
  assert.is(proxy.connections, 1);
});

Proxy("fanOut() stalls and drops through every proxy and counts the first one's connections only", async () => {
  const other = await startFaultProxy(db.server.port);
  try {
    const both = fanOut(proxy, other);
    const second = await db.client({ url: other.url });
    assert.is(await client.send(["PING"]), "PONG");
    assert.is(await second.send(["PING"]), "PONG");
    assert.is(both.url, proxy.url);
    assert.is(both.connections, 1);
    both.stall();
    let answered = false;
    const held = second.send(["ECHO", "held"]).then((r) => (answered = true, r));
    // Replies are held by the stall, not by a slow turn: the echo stays unanswered until resume().
    await turn();
    await turn();
    assert.is(answered, false);
    both.resume();
    assert.is(await held, "held");
    both.drop();
    await until(() => proxy.connections === 0 && other.connections === 0);
  } finally {
    await other.close();
  }
});

Proxy.run();
