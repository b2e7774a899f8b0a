/**
 * No error, event or inspect output prints a password, whatever its
 * characters and however the URL around it is mistyped: every case below
 * makes a mistake with a password in the URL and searches the message, the
 * whole cause chain, `util.inspect` of the error and the events for it.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { inspect } from "node:util";
import { connect, parseRedisUrl } from "../../resp/mod.ts";
import { redactUrl } from "../../resp/url.ts";
import type { ConnectionEvent } from "../../resp/types.ts";
import { freePort, type RedisServer } from "../support/redis_server.ts";
import { useRedis } from "../support/fixture.ts";

/** Passwords holding each character a URL gives a meaning to, and all of them at once. */
const PASSWORDS = ["S3cretPW#x", "S3cretPW/x", "S3cretPW?x", "S3cretPW@x", "S3cretPW%x", "S3cretPW:x", "a#b/c?d@e%f:g"];

/** URLs with `pw` in them, each wrong in one way (`port`: a port where a server listens). */
function mistakes(pw: string, port: number): string[] {
  return [
    `redis://u:${pw}@127.0.0.1:6a79`, // a bad port
    `redis://u:${pw}@127.0.0.1:99999`, // a port out of range
    `redis://u:${pw}@127.0.0.1:${port}/x`, // a bad db
    `redis://:${pw}@127.0.0.1:${port}/1/2`, // a path that is no db
    `redis:/u:${pw}@127.0.0.1:${port}`, // one slash
    `redis:u:${pw}@127.0.0.1:${port}`, // no slash
    `u:${pw}@127.0.0.1:6379`, // no scheme
    `${pw}@127.0.0.1`, // no scheme, no user
    `http://u:${pw}@127.0.0.1:${port}`, // a wrong scheme
    `redis//u:${pw}@127.0.0.1:${port}`, // a colon short
    `redis://u:${pw}@[::1:${port}`, // an unclosed IPv6 bracket
    `unix:///tmp/none.sock?password=${pw}&db=x`, // a bad db, password in the query
  ];
}

/** Everything an error can show: message, stack, each cause, and inspect() of it all. */
function shown(error: unknown): string {
  const parts: string[] = [inspect(error, { depth: 10, showHidden: true })];
  for (let e: unknown = error; e !== undefined && e !== null; e = (e as { cause?: unknown }).cause) {
    parts.push(String((e as Error).message), String((e as Error).stack));
  }
  return parts.join("\n");
}

function assertHidden(text: string, pw: string, where: string): void {
  assert.not.ok(text.includes(pw), `${where} shows the password ${JSON.stringify(pw)}:\n${text}`);
}

const redact = suite<{ server: RedisServer }>("a password in a URL never shows");
const db = useRedis(redact, { clients: 0, server: { args: ["--requirepass", "the-real-one"] } });

redact("a mistyped URL's TypeError hides the password, in message, causes and inspect()", async () => {
  const port = await freePort();
  for (const pw of PASSWORDS) {
    for (const url of mistakes(pw, port)) {
      let caught: unknown;
      try {
        parseRedisUrl(url);
      } catch (error) {
        caught = error;
      }
      assert.instance(caught, TypeError, `parseRedisUrl(${JSON.stringify(url)}) did not throw`);
      assertHidden(shown(caught), pw, `parseRedisUrl(${JSON.stringify(url)})`);
      const rejected = await connect(url).then(() => undefined, (error: unknown) => error);
      assertHidden(shown(rejected), pw, `connect(${JSON.stringify(url)})`);
    }
  }
});

redact("passwords with # / ? @ % : in a well-formed URL parse whole, as written", () => {
  for (const pw of PASSWORDS) {
    const got = parseRedisUrl(`redis://u:${pw}@127.0.0.1:6380/2`);
    assert.equal(got, { tls: false, username: "u", password: pw, host: "127.0.0.1", port: 6380, db: 2 });
  }
  // Percent-encoding still decodes; a % that starts no escape stays as written.
  assert.is(parseRedisUrl("redis://:p%40ss%3Aw@h").password, "p@ss:w");
  assert.is(parseRedisUrl("redis://:50%off@h").password, "50%off");
});

redact("a refused login and a refused connection hide it too, in the error and every event", async () => {
  const closed = await freePort();
  for (const pw of PASSWORDS) {
    for (const port of [db.server.port, closed]) {
      const events: ConnectionEvent[] = [];
      const error = await connect({
        url: `redis://u:${pw}@127.0.0.1:${port}/3`,
        reconnect: false,
        onEvent: (e) => events.push(e),
      }).then(() => undefined, (e: unknown) => e);
      assert.ok(error !== undefined, "connect() was refused");
      assertHidden(shown(error), pw, `connect() to port ${port}`);
      assertHidden(inspect(events, { depth: 10, showHidden: true }), pw, "the events");
      assert.ok(events.some((e) => e.type === "error"));
    }
  }
});

redact(
  "a password with those characters logs in when it is the right one",
  async ({ server }) => {
    const pw = "a#b/c?d@e%f:g";
    server.cli("-a", "the-real-one", "--no-auth-warning", "ACL", "SETUSER", "odd", "on", `>${pw}`, "~*", "+@all");
    const redis = await connect(`redis://odd:${pw}@127.0.0.1:${server.port}`);
    try {
      assert.is(await redis.send(["ACL", "WHOAMI"]), "odd");
      assertHidden(inspect(redis, { depth: 10, showHidden: true }), pw, "inspect() of the client");
    } finally {
      redis.destroy();
    }
  },
);

redact("redactUrl(): the user name stays where the URL says where it ends, the rest goes", () => {
  assert.is(redactUrl("redis://u:a#b@h:1/2"), "redis://u:***@h:1/2");
  assert.is(redactUrl("redis://:pw@h"), "redis://:***@h");
  assert.is(redactUrl("redis://pw@h"), "redis://***@h");
  assert.is(redactUrl("redis:/u:pw@h"), "redis:/***@h");
  assert.is(redactUrl("u:pw@h:6379"), "***@h:6379");
  assert.is(redactUrl("unix:///s.sock?db=1&password=a#b@c&x=1"), "unix:///s.sock?db=1&password=***&x=1");
  assert.is(redactUrl("redis://h:6379/2"), "redis://h:6379/2");
});

redact.run();
