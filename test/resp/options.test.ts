import { suite } from "uvu";
import * as assert from "uvu/assert";
import { parseRedisUrl } from "../../resp/mod.ts";
import { resolveConnectOptions } from "../../resp/options.ts";
import { rejects } from "../support/assert.ts";

const url = suite("parseRedisUrl()");
url("redis:// with user, password, port and db", () => {
  assert.equal(parseRedisUrl("redis://us%40r:p%3Ass@example.test:6380/4"), {
    tls: false,
    host: "example.test",
    port: 6380,
    username: "us@r",
    password: "p:ss",
    db: 4,
  });
});
url("rediss:// turns TLS on; IPv6 literals lose their brackets", () => {
  assert.equal(parseRedisUrl("rediss://[::1]:7000"), { tls: true, host: "::1", port: 7000 });
});
url("unix:// with query parameters", () => {
  assert.equal(parseRedisUrl("unix:///tmp/r.sock?db=2&password=x&username=u"), {
    path: "/tmp/r.sock",
    db: 2,
    password: "x",
    username: "u",
  });
});
url("bad URLs are TypeErrors that name the mistake, with the password hidden", async () => {
  const cases: [string, string][] = [
    ["http://x", `'url' must start with redis://, rediss:// or unix://, got "http://x" (scheme "http")`],
    [
      "localhost:6379",
      `'url' must start with redis://, rediss:// or unix://, got "localhost:6379" (scheme "localhost"; did you mean "redis://localhost:6379"?)`,
    ],
    [
      "not a url",
      `'url' must start with redis://, rediss:// or unix:// (e.g. redis://127.0.0.1:6379), got "not a url"`,
    ],
    ["redis:/host:6379", `'url' needs "//" after "redis:" (redis://...), got "redis:/host:6379"`],
    ["rediss:host", `'url' needs "//" after "rediss:" (rediss://...), got "rediss:host"`],
    ["redis://h:99999", `the port in 'url' must be an integer in 1..65535, got "99999" in "redis://h:99999"`],
    [
      "redis://u:pw@h:6a79/1",
      `the port in 'url' must be an integer in 1..65535, got "6a79" in "redis://u:***@h:6a79/1"`,
    ],
    [
      "redis://:s3cret@h/abc",
      `the database in 'url' must be a non-negative integer, got "abc" in "redis://:***@h/abc"`,
    ],
    [
      "unix:///tmp/r.sock?db=x&password=pw",
      `the database in 'url' must be a non-negative integer, got "x" in "unix:///tmp/r.sock?db=x&password=***"`,
    ],
  ];
  for (const [url, message] of cases) {
    await rejects(() => parseRedisUrl(url), TypeError, `Cannot connect: ${message}`);
  }
  // What is right still parses: brackets, an empty port, a db.
  assert.equal(parseRedisUrl("redis://[::1]:6380/2"), { tls: false, host: "::1", port: 6380, db: 2 });
  assert.equal(parseRedisUrl("redis://h:"), { tls: false, host: "h" });
});

const opts = suite("resolveConnectOptions()");
opts("defaults", () => {
  const o = resolveConnectOptions(undefined);
  assert.is(o.host, "127.0.0.1");
  assert.is(o.port, 6379);
  assert.is(o.resp, 3);
  assert.is(o.respFallback, true, "RESP3 unless the server refuses HELLO 3");
  assert.is(o.offlineQueue, 10_000);
  assert.equal(o.reconnect, { minMs: 50, maxMs: 2000 });
  assert.is(o.connectTimeoutMs, 10_000);
  assert.is(o.commandTimeoutMs, 0);
  assert.is(o.maxBulkBytes, 536870912);
});
opts("an explicit resp is what is spoken: no fallback", () => {
  assert.equal([resolveConnectOptions({ resp: 3 }).respFallback, resolveConnectOptions({ resp: 2 }).respFallback], [
    false,
    false,
  ]);
  assert.is(resolveConnectOptions({ resp: 2 }).resp, 2);
});
opts("explicit fields override the URL", () => {
  const o = resolveConnectOptions({ url: "redis://h:1/2", port: 3, db: 0 });
  assert.is(o.host, "h");
  assert.is(o.port, 3);
  assert.is(o.db, 0);
});
opts("every setting is validated with its name in the message", () => {
  const cases: [object, string][] = [
    [{ port: 0 }, "'port' must be an integer in 1..65535, got 0"],
    [{ resp: 4 }, "'resp' must be 2 or 3, got 4"],
    [{ db: -1 }, "'db' must be a non-negative integer, got -1"],
    [{ connectTimeoutMs: 0 }, "'connectTimeoutMs' must be a positive integer, got 0"],
    [{ commandTimeoutMs: 1.5 }, "'commandTimeoutMs' must be a non-negative integer, got 1.5"],
    [{ offlineQueue: -1 }, "'offlineQueue' must be a non-negative integer, got -1"],
    [{ offlineTimeoutMs: "1" }, "'offlineTimeoutMs' must be a non-negative integer, got \"1\""],
    [{ reconnect: { minMs: 0 } }, "'reconnect.minMs' must be a positive integer, got 0"],
    [{ reconnect: { minMs: 100, maxMs: 10 } }, "'reconnect.maxMs' must be >= 'reconnect.minMs' (100), got 10"],
    [{ host: 1 }, "'host' must be a string, got number"],
    [{ tls: "yes" }, "'tls' must be a boolean or node:tls options, got string"],
    [{ maxBulkBytes: -1 }, "'maxBulkBytes' must be an integer in 0..9007199254740991, got -1"],
    [{ maxBulkBytes: 2 ** 60 }, "'maxBulkBytes' must be an integer in 0..9007199254740991, got 1152921504606847000"],
    [42 as never, "options must be an object, got number"],
  ];
  for (const [given, message] of cases) {
    try {
      resolveConnectOptions(given as never);
      assert.unreachable(`accepted ${JSON.stringify(given)}`);
    } catch (e) {
      assert.ok(e instanceof RangeError || e instanceof TypeError);
      assert.is((e as Error).message, `Cannot connect: ${message}`);
    }
  }
});

url.run();
opts.run();
