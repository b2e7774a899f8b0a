import { suite } from "uvu";
import * as assert from "uvu/assert";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { readFileSync } from "node:fs";
import { connect, ConnectionError, RedisReplyError } from "../../resp/mod.ts";
import { freePort, type RedisServer, serverSupportsTls, startRedis } from "../support/redis_server.ts";
import { rejects } from "../support/assert.ts";
import { useRedis } from "../support/fixture.ts";

const test = suite<{ server: RedisServer }>("connect(): AUTH, SELECT, SETNAME, unix sockets");
useRedis(test, { clients: 0, server: { args: ["--requirepass", "main-secret"] } });
test.before((ctx) => {
  ctx.server.cli("-a", "main-secret", "--no-auth-warning", "ACL", "SETUSER", "app", "on", ">app-pass", "~*", "+@all");
});

for (const resp of [2, 3] as const) {
  test(`RESP${resp}: a wrong password is a ConnectionError naming the URL (password hidden), the server's WRONGPASS as cause`, async ({ server }) => {
    const ok = await connect({ url: `redis://app:app-pass@127.0.0.1:${server.port}`, resp });
    assert.is(await ok.send(["ACL", "WHOAMI"]), "app");
    ok.destroy();
    const events: string[] = [];
    const e = (await rejects(
      () =>
        connect({
          url: `redis://app:wrong-secret@127.0.0.1:${server.port}/2`,
          resp,
          onEvent: (event) => events.push(event.type),
        }),
      ConnectionError,
      new RegExp(
        `^Cannot connect to redis://app:\\*\\*\\*@127\\.0\\.0\\.1:${server.port}/2: the server refused the password of user "app" \\(WRONGPASS `,
      ),
    )) as ConnectionError;
    assert.not.match(e.message, /wrong-secret/);
    assert.instance(e.cause, RedisReplyError);
    assert.is((e.cause as RedisReplyError).code, "WRONGPASS");
    assert.equal(events, ["connect", "error"]);
  });
}

test("a password alone authenticates the default user", async ({ server }) => {
  const ok = await connect({ url: `redis://:main-secret@127.0.0.1:${server.port}` });
  assert.is(await ok.send(["ACL", "WHOAMI"]), "default");
  ok.destroy();
});

for (const resp of [2, 3, undefined] as const) {
  test(`resp: ${resp}: no password for a server that needs one fails connect() itself, saying none was given`, async ({ server }) => {
    const events: string[] = [];
    const e = (await rejects(
      () =>
        connect({
          url: server.url,
          ...(resp === undefined ? {} : { resp }),
          onEvent: (event) => events.push(event.type),
        }),
      ConnectionError,
      new RegExp(
        `^Cannot connect to redis://127\\.0\\.0\\.1:${server.port}: the server requires a password and none was given \\(NOAUTH `,
      ),
    )) as ConnectionError;
    assert.is((e.cause as RedisReplyError).code, "NOAUTH");
    assert.equal(events, ["connect", "error"]);
  });
}

test("lazyConnect, RESP2: the first command's rejection names the missing password", async ({ server }) => {
  const anon = await connect({ url: server.url, resp: 2, lazyConnect: true });
  try {
    const e = (await rejects(
      () => anon.send(["GET", "x"]),
      RedisReplyError,
      "NOAUTH Authentication required. (the server requires a password and none was given: pass 'password' to " +
        "connect(), or put it in the URL, redis://:<password>@host)",
    )) as RedisReplyError;
    assert.is(e.code, "NOAUTH");
    assert.is((e.cause as RedisReplyError).message, "NOAUTH Authentication required.");
  } finally {
    anon.destroy();
  }
});

test("lazyConnect, RESP3: the first command's rejection names the missing password", async ({ server }) => {
  const anon = await connect({ url: server.url, lazyConnect: true });
  try {
    await rejects(
      () => anon.send(["GET", "x"]),
      ConnectionError,
      new RegExp(
        `^Cannot connect to redis://127\\.0\\.0\\.1:${server.port}: the server requires a password and none was given \\(NOAUTH `,
      ),
    );
  } finally {
    anon.destroy();
  }
});

test("a database out of range is a ConnectionError naming SELECT, the server's error as cause", async ({ server }) => {
  const e = (await rejects(
    () => connect({ url: `redis://:main-secret@127.0.0.1:${server.port}/99` }),
    ConnectionError,
    new RegExp(
      `^Cannot connect to redis://:\\*\\*\\*@127\\.0\\.0\\.1:${server.port}/99: the server refused SELECT 99 \\(ERR `,
    ),
  )) as ConnectionError;
  assert.instance(e.cause, RedisReplyError);
});

test("db is selected and name set on connect, over a unix socket too", async ({ server }) => {
  const path = join(server.dir, "redis.sock");
  for (
    const target of [
      { url: `redis://:main-secret@127.0.0.1:${server.port}/3`, name: "herdless-test" },
      { url: `unix://${path}?db=3&password=main-secret`, name: "herdless-test" },
      { path, db: 3, password: "main-secret", name: "herdless-test", resp: 3 as const },
    ]
  ) {
    const c = await connect(target);
    const info = (await c.send(["CLIENT", "INFO"])) as string;
    assert.match(info, / db=3 /);
    assert.match(info, / name=herdless-test /);
    c.destroy();
  }
});

const tls = suite<{ server: RedisServer; ca: string }>("connect(): TLS");
const canTls = serverSupportsTls();
tls.before(async (ctx) => {
  if (!canTls) return;
  const port = await freePort();
  const certs = await startRedis({ args: [] });
  // Keep the cert files in a server directory that outlives this suite's server.
  const dir = certs.dir;
  await certs.kill();
  const run = (...args: string[]) => {
    const r = spawnSync("openssl", args, { cwd: dir, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`openssl ${args.join(" ")}: ${r.stderr}`);
  };
  run(
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-days",
    "1",
    "-subj",
    "/CN=herdless-test-ca",
    "-keyout",
    "ca.key",
    "-out",
    "ca.crt",
  );
  run("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", "server.key", "-out", "server.csr");
  spawnSync("sh", ["-c", "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1' > ext.cnf"], { cwd: dir });
  run(
    "x509",
    "-req",
    "-in",
    "server.csr",
    "-CA",
    "ca.crt",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-days",
    "1",
    "-extfile",
    "ext.cnf",
    "-out",
    "server.crt",
  );
  ctx.ca = readFileSync(join(dir, "ca.crt"), "utf8");
  ctx.server = await startRedis({
    port,
    tlsOnly: true,
    args: [
      "--port",
      "0",
      "--tls-port",
      String(port),
      "--tls-cert-file",
      join(dir, "server.crt"),
      "--tls-key-file",
      join(dir, "server.key"),
      "--tls-ca-cert-file",
      join(dir, "ca.crt"),
      "--tls-auth-clients",
      "no",
    ],
  });
  await certs.stop();
});
tls.after(async (ctx) => {
  await ctx.server?.stop();
});

tls("rediss:// with the test's own CA connects and round-trips; an unknown CA is refused", async (ctx) => {
  if (!canTls) {
    // Not a pass in disguise: this build of redis-server has no TLS, and the suite says so.
    console.log("  (redis-server was built without TLS: the TLS suite checked only that it is absent)");
    assert.is(serverSupportsTls(), false);
    return;
  }
  const c = await connect({ url: `rediss://localhost:${ctx.server.port}`, tls: { ca: ctx.ca } });
  await c.send(["SET", "tls", "yes"]);
  assert.is(await c.send(["GET", "tls"]), "yes");
  c.destroy();
  await rejects(
    () => connect({ url: `rediss://127.0.0.1:${ctx.server.port}`, connectTimeoutMs: 2000 }),
    ConnectionError,
    /^Cannot connect to rediss:\/\/127\.0\.0\.1:\d+: /,
  );
});

test.run();
tls.run();
