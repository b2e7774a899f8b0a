/**
 * What the cloudflare:sockets transport refuses before any I/O, checked on
 * every runtime (the transport itself runs in test/workerd/).
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { resolveConnectOptions } from "../../../resp/options.ts";
import { openCloudflareTransport } from "../../../resp/transport/cloudflare.ts";
import { isWorkerd } from "../../../resp/shared/mod.ts";
import { rejects } from "../../support/assert.ts";

const Cloudflare = suite("cloudflare:sockets transport");

const events = { data: () => {}, drain: () => {}, close: () => {} };
const WHY_TLS = "TLS to publicly trusted servers only, by host name, without client certificates";

Cloudflare("options workerd's connect() cannot honour are a TypeError naming them, before any I/O", async () => {
  const cases: [Record<string, unknown>, string][] = [
    [
      { path: "/tmp/redis.sock" },
      `Cannot connect: 'path' is not supported on Cloudflare Workers (connect() of cloudflare:sockets has no unix sockets)`,
    ],
    [
      { tls: { ca: "PEM" } },
      `Cannot connect: 'tls.ca' is not supported on Cloudflare Workers (connect() of cloudflare:sockets has ${WHY_TLS})`,
    ],
    [
      { tls: { cert: "PEM", key: "PEM" } },
      `Cannot connect: 'tls.cert' is not supported on Cloudflare Workers (connect() of cloudflare:sockets has ${WHY_TLS})`,
    ],
    [
      { tls: { key: "PEM" } },
      `Cannot connect: 'tls.key' is not supported on Cloudflare Workers (connect() of cloudflare:sockets has ${WHY_TLS})`,
    ],
    [
      { tls: { rejectUnauthorized: false } },
      `Cannot connect: 'tls.rejectUnauthorized' is not supported on Cloudflare Workers (connect() of cloudflare:sockets has ${WHY_TLS})`,
    ],
    [
      { tls: { servername: "other.example" } },
      `Cannot connect: 'tls.servername' is not supported on Cloudflare Workers (connect() of cloudflare:sockets has ${WHY_TLS})`,
    ],
  ];
  for (const [options, message] of cases) {
    const o = resolveConnectOptions({ host: "redis.example", ...options });
    await rejects(() => openCloudflareTransport(o, events), TypeError, message);
  }
});

Cloudflare("is picked only under workerd, by its navigator.userAgent", () => {
  assert.is(isWorkerd(), false);
});

Cloudflare.run();
