import { suite } from "uvu";
import * as assert from "uvu/assert";
import { profileName, settingsOf } from "../../../lab/chaos/config.ts";
import { buildFaults } from "../../../lab/chaos/faults.ts";
import { rejects } from "../../support/assert.ts";

const Config = suite("chaos profiles");

Config(
  "--profile eviction-storm gives the eviction storm's settings and its 1 MB allkeys-lru fault, in argv or the environment",
  () => {
    for (const argv of [["--profile", "eviction-storm"], ["--profile=eviction-storm"]]) {
      assert.is(profileName(["node", "run.ts", ...argv], {}), "eviction-storm");
    }
    assert.is(profileName(["node", "worker.ts", "{}"], { HERDLESS_CHAOS_PROFILE: "eviction-storm" }), "eviction-storm");
    assert.is(profileName(["node", "run.ts"], {}), undefined);
    const s = settingsOf("eviction-storm");
    assert.equal(
      [s.workers, s.rate, s.keys, s.ttlMs, s.staleMs, s.leaseMs, s.spreadMs, s.faultMs],
      [4, 500, 200, 1000, 1000, 500, 200, 10_000],
    );
    const faults = buildFaults(s.faultMs);
    const scheduled = faults.filter((f) => s.only!.some((o) => f.name.toLowerCase().includes(o)));
    assert.equal(scheduled.map((f) => f.name), ["maxmemory 1mb allkeys-lru"]);
    // The default run keeps its schedule: the storm is an extra fault.
    assert.is(settingsOf(undefined).only, undefined);
    assert.ok(faults.find((f) => f.name === "maxmemory 1mb allkeys-lru")!.extra);
  },
);

Config("an unknown profile is a RangeError naming the known ones", async () => {
  await rejects(
    () => profileName(["--profile", "storm"], {}),
    RangeError,
    'Cannot run chaos: unknown profile "storm" (known: eviction-storm)',
  );
});

Config.run();
