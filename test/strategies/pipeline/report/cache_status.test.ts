import { suite } from "uvu";
import * as assert from "uvu/assert";
import { cacheStatus } from "../../../../strategies/pipeline/report/cache_status.ts";
import type { CacheResult } from "../../../../strategies/types.ts";
import { rejects } from "../../../support/assert.ts";

const CacheStatus = suite("cacheStatus()");

const result = (r: Partial<CacheResult<unknown>>): CacheResult<unknown> => ({
  value: 1,
  source: "redis",
  stale: false,
  ageMs: 0,
  freshForMs: 0,
  stored: false,
  degraded: false,
  notModified: false,
  ...r,
});

CacheStatus("cacheStatus() writes RFC 9211 members from the result's fields alone", () => {
  assert.is(cacheStatus(result({ freshForMs: 42_999 })), "herdless; hit; ttl=42");
  assert.is(cacheStatus(result({ freshForMs: -2_001, stale: true })), "herdless; hit; ttl=-3");
  assert.is(cacheStatus(result({ freshForMs: 0, stale: true })), "herdless; hit; ttl=0");
  assert.is(cacheStatus(result({ source: "near", freshForMs: 1_000 })), "herdless; hit; ttl=1; detail=near");
  assert.is(cacheStatus(result({ source: "origin", stored: true, freshForMs: 9_000 })), "herdless; fwd=miss; stored");
  assert.is(cacheStatus(result({ source: "origin" })), "herdless; fwd=miss");
  assert.is(cacheStatus(result({ source: "origin" }), { name: "edge/api:1" }), "edge/api:1; fwd=miss");
  // Not a token: a quoted string, with its quotes and backslashes escaped.
  assert.is(
    cacheStatus(result({ source: "origin" }), { name: 'my "cache" \\ 1' }),
    '"my \\"cache\\" \\\\ 1"; fwd=miss',
  );
});

CacheStatus("cacheStatus() refuses a name that is not printable ASCII and a result that is not one", async () => {
  await rejects(
    () => cacheStatus(result({}), { name: "café" }),
    TypeError,
    `Cannot write Cache-Status: 'name' must be a non-empty string of printable ASCII, got "café"`,
  );
  await rejects(
    () => cacheStatus(result({}), { name: "" }),
    TypeError,
    `Cannot write Cache-Status: 'name' must be a non-empty string of printable ASCII, got ""`,
  );
  await rejects(
    () => cacheStatus({ value: 1 } as never),
    TypeError,
    "Cannot write Cache-Status: 'result' must be what getEntry() resolved",
  );
});

CacheStatus.run();
