/**
 * Every options object of the client layer refuses a key it does not know,
 * naming it and the close one it probably meant: a misspelt option would
 * otherwise be ignored and its default used in silence.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createServer } from "node:net";
import { connect, connectCluster, connectSentinel, type SendOptions } from "../../resp/mod.ts";
import { ClusterClient } from "../../resp/cluster/client.ts";
import { resolveClusterOptions } from "../../resp/cluster/options.ts";
import { fromBunRedis, fromIoredis, fromNodeRedis } from "../../resp/adapters/mod.ts";
import { rejects } from "../support/assert.ts";
import { listenLoopback } from "../support/listen.ts";

/** A loopback port nothing listens on: nothing in these tests may connect anywhere. */
async function closedPort(): Promise<number> {
  const server = createServer();
  const port = await listenLoopback(server);
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

const factories = suite("unknown options of connect(), connectCluster(), connectSentinel()");

factories("connect() names the key and the setting it resembles", async () => {
  await rejects(
    () => connect({ comandTimeoutMs: 100 } as never),
    TypeError,
    "Unknown option 'comandTimeoutMs' for connect(); did you mean 'commandTimeoutMs'?",
  );
  await rejects(
    () => connect({ lazyconnect: true } as never),
    TypeError,
    "Unknown option 'lazyconnect' for connect(); did you mean 'lazyConnect'?",
  );
  await rejects(() => connect({ retries: 3 } as never), TypeError, "Unknown option 'retries' for connect()");
});

factories("connect()'s nested reconnect is checked too", async () => {
  await rejects(
    () => connect({ reconnect: { minMs: 10, maxMS: 100 } } as never),
    TypeError,
    "Unknown option 'reconnect.maxMS' for connect(); did you mean 'reconnect.maxMs'?",
  );
  await rejects(
    () => connect({ reconnect: 100 } as never),
    TypeError,
    "Cannot connect: 'reconnect' must be false or an object ({ minMs, maxMs }), got 100",
  );
});

factories("connectCluster() checks its own keys and the shared ones", async () => {
  await rejects(
    () => connectCluster({ seeds: ["redis://127.0.0.1:7000"], maxRedirects: 3 } as never),
    TypeError,
    "Unknown option 'maxRedirects' for connectCluster(); did you mean 'maxRedirections'?",
  );
  await rejects(
    () => connectCluster({ seeds: ["redis://127.0.0.1:7000"], reconnect: { minms: 1 } } as never),
    TypeError,
    "Unknown option 'reconnect.minms' for connectCluster(); did you mean 'reconnect.minMs'?",
  );
  // A key of connect() that a cluster does not take is unknown here.
  await rejects(
    () => connectCluster({ seeds: ["redis://127.0.0.1:7000"], db: 1 } as never),
    TypeError,
    "Unknown option 'db' for connectCluster()",
  );
});

factories("connectSentinel() checks its own keys and the data node's", async () => {
  const sentinels = ["redis://127.0.0.1:26379"];
  await rejects(
    () => connectSentinel({ sentinels, name: "m", checkIntervalMS: 10 } as never),
    TypeError,
    "Unknown option 'checkIntervalMS' for connectSentinel(); did you mean 'checkIntervalMs'?",
  );
  await rejects(
    () => connectSentinel({ sentinels, name: "m", pasword: "x" } as never),
    TypeError,
    "Unknown option 'pasword' for connectSentinel(); did you mean 'password'?",
  );
  await rejects(
    () => connectSentinel({ sentinels, name: "m", reconnect: { max: 1 } } as never),
    TypeError,
    "Unknown option 'reconnect.max' for connectSentinel(); did you mean 'reconnect.maxMs'?",
  );
});

const send = suite("unknown or mistyped options of send()");

/** Each case: options, and the rejection (class, message) that every client and adapter gives for them. */
const CASES: [unknown, typeof TypeError | typeof RangeError, string][] = [
  [{ timeOutMs: 5 }, TypeError, "Unknown option 'timeOutMs' for send(); did you mean 'timeoutMs'?"],
  [{ signals: undefined }, TypeError, "Unknown option 'signals' for send(); did you mean 'signal'?"],
  [{ retry: true }, TypeError, "Unknown option 'retry' for send()"],
  [{ signal: { aborted: false } }, TypeError, "Cannot send: 'signal' must be an AbortSignal, got an object"],
  [{ signal: "stop" }, TypeError, `Cannot send: 'signal' must be an AbortSignal, got "stop"`],
  [{ timeoutMs: -1 }, RangeError, "Cannot send: 'timeoutMs' must be a non-negative finite number (0: none), got -1"],
  [
    { timeoutMs: Infinity },
    RangeError,
    "Cannot send: 'timeoutMs' must be a non-negative finite number (0: none), got Infinity",
  ],
  [
    { timeoutMs: "5" },
    RangeError,
    "Cannot send: 'timeoutMs' must be a non-negative finite number (0: none), got string",
  ],
  [{ buffers: 1 }, TypeError, "Cannot send: 'buffers' must be a boolean, got number"],
  [{ onAttribute: {} }, TypeError, "Cannot send: 'onAttribute' must be a function, got object"],
];

async function refusesEach(sendWith: (options: SendOptions) => Promise<unknown>): Promise<void> {
  for (const [options, ErrorClass, message] of CASES) {
    await rejects(() => sendWith(options as SendOptions), ErrorClass, message);
  }
}

send("RedisClient.send() refuses them before anything is sent (a lazy client opens no socket)", async () => {
  const redis = await connect({ port: await closedPort(), lazyConnect: true, reconnect: false });
  try {
    await refusesEach((options) => redis.send(["GET", "k"], options));
    assert.is(redis.writes, 0);
    assert.is(redis.pending, 0);
  } finally {
    redis.destroy();
  }
});

send("ClusterClient.send() refuses them too", async () => {
  const cluster = new ClusterClient(resolveClusterOptions({ seeds: [`127.0.0.1:${await closedPort()}`] }));
  cluster.ready.catch(() => {});
  try {
    await refusesEach((options) => cluster.send(["GET", "k"], options));
  } finally {
    cluster.destroy();
  }
});

send("the adapters refuse them before calling the foreign client", async () => {
  let calls = 0;
  const called = () => {
    calls++;
    return Promise.resolve("never");
  };
  // Structural stand-ins: the adapters check what they are given before
  // calling anything, so no client (and no server) is needed to see it.
  const adapters = [
    fromIoredis({ call: called, callBuffer: called } as never),
    fromNodeRedis({ sendCommand: called } as never),
    fromBunRedis({ send: called, getBuffer: called } as never),
  ];
  for (const adapter of adapters) await refusesEach((options) => adapter.send(["GET", "k"], options));
  assert.is(calls, 0);
});

factories.run();
send.run();
