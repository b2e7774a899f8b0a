import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { LoadRun } from "../../../lab/chaos/load.ts";
import type { PhaseSummary } from "../../../lab/chaos/metrics.ts";
import type { Row } from "../../../lab/chaos/table.ts";
import { verdict, type VerdictInput } from "../../../lab/chaos/verdict.ts";

const Verdict = suite("verdict()");

function row(name: string, summary: Partial<PhaseSummary> = {}, workersAfter = 4): Row {
  return {
    name,
    fault: name !== "baseline",
    summary: {
      gets: 100,
      errors: {},
      messages: {},
      p50: 1,
      p99: 2,
      max: 3,
      hangs: 0,
      backwards: 0,
      lost: 0,
      wrong: 0,
      late: 0,
      shed: 0,
      recoverMs: 0,
      rssBefore: 0,
      rssAfter: 0,
      ...summary,
    },
    origin: { calls: 0, faultRate: 0, excess: 0, byKey: new Map() },
    before: { workers: 4, server: 5, proxy: 4 },
    after: { workers: workersAfter, server: 5, proxy: 4 },
  };
}

function load(settledWorkers: number): LoadRun {
  return { name: "1 MB value burst", requests: 100, bytes: 1, errors: 0, settledWorkers, workers: 4, ms: 900 };
}

function input(over: Partial<VerdictInput> = {}): VerdictInput {
  return {
    rows: [row("baseline"), row("SIGSTOP 3 s", { recoverMs: 1250 }), row("1 MB value burst", { recoverMs: 500 })],
    hangs: 0,
    closeHangs: [],
    expected: 4,
    left: { workers: 0, server: 1, proxy: 0 },
    failedWorkers: [],
    recoverMs: 6000,
    loads: [load(4)],
    baselineRate: 0,
    ...over,
  };
}

Verdict(
  "verdict() passes a run whose every fault recovered and whose load arrived, errors during faults included",
  () => {
    const rows = input().rows;
    rows[1]!.summary.errors = { TimeoutError: 3000 };
    assert.equal(verdict(input({ rows })), { failures: [], inconclusive: [] });
  },
);

Verdict("verdict() fails a fault a worker never recovered from, naming the recovery bound of the run", () => {
  const { failures, inconclusive } = verdict(
    input({ rows: [row("1 MB value burst", { recoverMs: undefined })], recoverMs: 4000 }),
  );
  assert.equal(failures, ["1 MB value burst: a worker did not recover within 4000 ms"]);
  assert.equal(inconclusive, []);
});

Verdict("verdict() fails a load fault whose requests never all arrived", () => {
  const { failures } = verdict(input({ loads: [load(3)] }));
  assert.is(failures.length, 1);
  assert.match(failures[0]!, /^1 MB value burst: 1 of 4 workers still had requests of the fault pending/);
});

Verdict("verdict() fails hangs, values going backwards, another key's value and leaked connections", () => {
  const { failures } = verdict(input({
    rows: [row("FLUSHALL", { backwards: 2, wrong: 1 }, 5)],
    hangs: 3,
    left: { workers: 1, server: 2, proxy: 0 },
    failedWorkers: ["worker 2 exited (code 1, signal null)"],
  }));
  assert.equal(failures, [
    "3 gets never settled within 10000 ms",
    "FLUSHALL: 2 values went backwards",
    "FLUSHALL: 1 gets were served another key's value",
    "FLUSHALL: connections leaked (5 on the server, 4 in the proxy, expected 4)",
    "after close(): 1 worker connections on the server, 0 in the proxy",
    "worker 2 exited (code 1, signal null)",
  ]);
});

Verdict("verdict() calls a slow recovery inconclusive, not failed, when the baseline itself failed", () => {
  const { failures, inconclusive } = verdict(input({
    rows: [row("baseline"), row("SIGSTOP 3 s", { recoverMs: undefined })],
    baselineRate: 0.4,
  }));
  assert.equal(failures, []);
  assert.equal(inconclusive, [
    "the baseline failed: 40.00% of its gets failed with no fault running (more than 1.00%): this machine could not carry the run's load, so recovery is not judged",
    "SIGSTOP 3 s: a worker did not recover within 6000 ms",
  ]);
});

Verdict("verdict() still fails what holds on any machine when the baseline failed: backwards, hangs, leaks", () => {
  const { failures, inconclusive } = verdict(input({
    rows: [row("baseline"), row("FLUSHALL", { backwards: 1, recoverMs: undefined }, 5)],
    hangs: 1,
    baselineRate: 1,
  }));
  assert.equal(failures, [
    "1 gets never settled within 10000 ms",
    "FLUSHALL: 1 values went backwards",
    "FLUSHALL: connections leaked (5 on the server, 4 in the proxy, expected 4)",
  ]);
  assert.is(inconclusive.length, 2);
  assert.match(inconclusive[1]!, /^FLUSHALL: a worker did not recover/);
});

Verdict.run();
