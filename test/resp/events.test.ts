import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connect, ConnectionError, TimeoutError } from "../../resp/mod.ts";
import type { ConnectionEvent } from "../../resp/types.ts";
import { rejects } from "../support/assert.ts";
import { useRedis } from "../support/fixture.ts";
import type { RedisServer } from "../support/redis_server.ts";
import { until } from "../support/wait.ts";

const test = suite<{ server: RedisServer }>("RedisClient: connection events and offline errors");
useRedis(test, { clients: 0 });

test("connect, ready, disconnect, reconnecting with the attempt, error, then connect and ready again", async ({ server }) => {
  const events: ConnectionEvent[] = [];
  const redis = await connect({
    url: server.url,
    reconnect: { minMs: 10, maxMs: 40 },
    onEvent: (event) => events.push(event),
  });
  const address = `127.0.0.1:${server.port}`;
  try {
    assert.equal(events, [{ type: "connect", server: address }, { type: "ready", server: address, generation: 1 }]);
    // A second listener added later, and one that throws: neither breaks anything.
    const late: string[] = [];
    const stop = redis.onEvent((event) => late.push(event.type));
    redis.onEvent(() => {
      throw new Error("a broken logger");
    });
    await server.kill();
    await until(() => events.filter((e) => e.type === "error").length >= 2);
    const lost = events.slice(2);
    assert.is(lost[0]!.type, "disconnect");
    assert.is(lost[1]!.type, "reconnecting");
    const attempts = lost.filter((e) => e.type === "reconnecting").map((e) => (e as { attempt: number }).attempt);
    assert.equal(attempts, attempts.map((_, i) => i + 1));
    const failures = lost.filter((e) => e.type === "error") as { error: unknown }[];
    assert.instance(failures[0]!.error, Error);
    stop();
    const heard = late.length;
    await server.restart();
    await until(() => events.at(-1)?.type === "ready");
    assert.equal(events.slice(-2), [
      { type: "connect", server: address },
      { type: "ready", server: address, generation: 2 },
    ]);
    assert.is(late.length, heard, "a stopped listener hears nothing");
    assert.is(await redis.send(["PING"]), "PONG");
  } finally {
    redis.destroy();
  }
});

test("a command that times out while disconnected names the target and the last socket error", async ({ server }) => {
  const errors: unknown[] = [];
  const redis = await connect({
    url: server.url,
    reconnect: { minMs: 10, maxMs: 40 },
    onEvent: (event) => {
      if (event.type === "error") errors.push(event.error);
    },
  });
  const patientErrors: unknown[] = [];
  const patient = await connect({
    url: server.url,
    offlineTimeoutMs: 30,
    reconnect: { minMs: 10, maxMs: 40 },
    onEvent: (event) => {
      if (event.type === "error") patientErrors.push(event.error);
    },
  });
  try {
    await server.kill();
    await until(() => errors.length >= 1 && patientErrors.length >= 1);
    const e = (await rejects(
      () => redis.send(["GET", "k"], { timeoutMs: 50 }),
      TimeoutError,
      new RegExp(
        `^Command GET timed out: 'timeoutMs' of 50 ms ran out: not connected to redis://127\\.0\\.0\\.1:${server.port} \\(last error: .+\\)$`,
      ),
    )) as TimeoutError;
    assert.ok(errors.includes(e.cause), "the cause is the error of a failed attempt");
    assert.ok(e.message.includes((e.cause as Error).message));
    // A command that waited offlineTimeoutMs in the queue says the same.
    await rejects(
      () => patient.send(["PING"]),
      ConnectionError,
      new RegExp(
        `^Not connected to redis://127\\.0\\.0\\.1:${server.port} for 30 ms \\(offlineTimeoutMs\\) \\(last error: .+\\)$`,
      ),
    );
  } finally {
    redis.destroy();
    patient.destroy();
    await server.restart();
  }
});

test("a command that times out on a live connection says nothing about the connection", async ({ server }) => {
  const redis = await connect(server.url);
  try {
    server.signal("SIGSTOP");
    await rejects(
      () => redis.send(["GET", "k"], { timeoutMs: 50 }),
      TimeoutError,
      "Command GET timed out: 'timeoutMs' of 50 ms ran out",
    );
  } finally {
    server.signal("SIGCONT");
    redis.destroy();
  }
});

test("onEvent must be a function, named in the message", async () => {
  await rejects(
    () => connect({ onEvent: 5 as never }),
    TypeError,
    "Cannot connect: 'onEvent' must be a function, got number",
  );
});

test.run();
