/**
 * pipeline({ schema }) against two real Standard Schema libraries, zod and
 * valibot (this folder's own package.json: dev only, never a dependency of
 * herdless, which declares the interface itself). A loaded value is
 * validated before it is stored; a value decoded from Redis once, never on a
 * near hit; the loader's value is stored and the schema's output returned;
 * synchronous and asynchronous schemas; getMany per identity.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import * as v from "valibot";
import { z } from "zod";
import { lease } from "../../strategies/lease.ts";
import { near } from "../../strategies/near.ts";
import { isSchemaError, SchemaError } from "../../strategies/errors.ts";
import { pipeline } from "../../strategies/pipeline/pipeline.ts";
import type { StandardSchemaV1 } from "../../strategies/schema.ts";
import { rejects } from "../support/assert.ts";
import { useRedis } from "../support/fixture.ts";
import { events } from "../support/strategies.ts";
import { until } from "../support/wait.ts";

const Schema = suite("pipeline({ schema })");
const db = useRedis(Schema, { prefix: "schema", clients: 2 });

interface User {
  name: string;
  age: number;
}

/** The same shape in both libraries, synchronous and asynchronous. */
const LIBRARIES: readonly {
  name: string;
  user: StandardSchemaV1<unknown, User>;
  slow: StandardSchemaV1<unknown, User>;
}[] = [
  {
    name: "zod",
    user: z.object({ name: z.string(), age: z.number() }),
    slow: z.object({ name: z.string().refine(async (s) => (await Promise.resolve(s)).length > 0), age: z.number() }),
  },
  {
    name: "valibot",
    user: v.object({ name: v.string(), age: v.number() }),
    slow: v.objectAsync({
      name: v.pipeAsync(v.string(), v.checkAsync(async (s) => (await Promise.resolve(s)).length > 0)),
      age: v.number(),
    }),
  },
];

/** `schema`, counting its validations. */
function counted<S extends StandardSchemaV1>(schema: S): { schema: S; calls: () => number } {
  let calls = 0;
  const props = schema["~standard"];
  const wrapped = {
    "~standard": {
      ...props,
      validate(value: unknown) {
        calls++;
        return props.validate(value);
      },
    },
  } as S;
  return { schema: wrapped, calls: () => calls };
}

for (const lib of LIBRARIES) {
  for (const kind of ["sync", "async"] as const) {
    const user = kind === "sync" ? lib.user : lib.slow;
    Schema(
      `${lib.name}, ${kind}: a loaded value the schema refuses is a SchemaError naming the path; nothing is stored`,
      async () => {
        const ev = events();
        const cache = pipeline<User>(
          {
            redis: db.redis,
            ttlMs: 60_000,
            namespace: db.ns(),
            schema: user,
            onEvent: ev.onEvent,
            label: () => "user 1",
          },
          lease(),
        );
        let error: unknown;
        try {
          await cache.get("u1", () => ({ name: 7, age: 1 }) as never);
        } catch (e) {
          error = e;
        }
        assert.ok(isSchemaError(error), String(error));
        const e = error as SchemaError;
        assert.instance(e, SchemaError);
        assert.instance(e, TypeError);
        assert.is(e.path, "$.name");
        assert.match(e.message, /^Cannot cache user 1 \(.+\): the schema refused the value at \$\.name \(.+\)$/);
        assert.ok(e.issues.length >= 1 && e.issues[0]!.message.length > 0);
        assert.is(e.key, cache.keys("u1").data);
        assert.is(await db.redis.send(["EXISTS", cache.keys("u1").data]), 0, "nothing stored");
        assert.is(await db.redis.send(["EXISTS", cache.keys("u1").lease]), 0, "the lease released");
        assert.is(cache.stats().loadErrors, 1);
        // A valid value is stored and served.
        assert.equal(await cache.get("u1", () => ({ name: "Ada", age: 36 })), { name: "Ada", age: 36 });
        assert.equal(await cache.get("u1", () => ({ name: "never", age: 0 })), { name: "Ada", age: 36 });
        await cache.close();
      },
    );

    Schema(`${lib.name}, ${kind}: a stored value of the wrong shape is a miss (event invalid), reloaded`, async () => {
      const namespace = db.ns();
      // Another program (or an older release) wrote a user without its age.
      const older = pipeline<unknown>({ redis: db.other, ttlMs: 60_000, namespace });
      await older.set("u1", { name: "Ada" });
      await older.close();
      const ev = events();
      const cache = pipeline<User>({ redis: db.redis, ttlMs: 60_000, namespace, schema: user, onEvent: ev.onEvent });
      assert.equal(await cache.get("u1", () => ({ name: "Ada", age: 36 })), { name: "Ada", age: 36 });
      assert.equal([cache.stats().invalid, cache.stats().misses, cache.stats().loads], [1, 1, 1]);
      const invalid = ev.seen.find((e) => e.type === "invalid") as { key: string; issues: readonly unknown[] };
      assert.equal([invalid.key, invalid.issues.length >= 1], [cache.keys("u1").data, true]);
      assert.equal(await cache.get("u1", () => ({ name: "never", age: 0 })), { name: "Ada", age: 36 });
      assert.is(cache.stats().invalid, 1, "the reloaded value is valid");
      await cache.close();
    });
  }

  Schema(
    `${lib.name}: Redis stores the loader's value, callers get the schema's output, validated once per read`,
    async () => {
      const output = lib.name === "zod"
        ? z.object({ name: z.string(), born: z.string().transform((s) => new Date(s)) })
        : v.object({ name: v.string(), born: v.pipe(v.string(), v.transform((s) => new Date(s))) });
      const { schema, calls } = counted(output as StandardSchemaV1<unknown, { name: string; born: Date }>);
      const namespace = db.ns();
      const evB = events();
      const one = pipeline<{ name: string; born: Date }>({ redis: db.redis, ttlMs: 60_000, namespace, schema });
      const two = pipeline<{ name: string; born: Date }>(
        { redis: db.other, ttlMs: 60_000, namespace, schema, onEvent: evB.onEvent },
        near(),
      );
      const loaded = await one.get("ada", () => ({ name: "Ada", born: "1815-12-10" }) as never);
      assert.instance(loaded.born, Date);
      assert.is(calls(), 1, "validated once before it was stored");
      const stored = String(await db.redis.send(["GET", one.keys("ada").data]));
      assert.ok(stored.endsWith(`{"name":"Ada","born":"1815-12-10"}`), stored);
      // The other process reads it: validated once at decode, then near hits validate nothing.
      const hit = await two.get("ada", () => Promise.reject(new Error("never")));
      assert.equal([hit.born instanceof Date, hit.born.getUTCFullYear()], [true, 1815]);
      assert.is(calls(), 2);
      await until(async () => (await two.getEntry("ada", () => Promise.reject(new Error("never")))).source === "near");
      const before = calls();
      for (let i = 0; i < 20; i++) {
        assert.instance((await two.get("ada", () => Promise.reject(new Error("x")))).born, Date);
      }
      assert.is(calls(), before, "no validation on a near hit");
      assert.is(two.stats().invalid, 0);
      await one.close();
      await two.close();
    },
  );
}

for (const resp of [3, 2] as const) {
  Schema(
    `getMany validates per identity: a stored bad one reloads, a loaded bad one rejects, the rest are stored (RESP${resp})`,
    async () => {
      const redis = resp === 3 ? db.redis : await db.client({ resp: 2 });
      const namespace = db.ns();
      const older = pipeline<unknown>({ redis: db.other, ttlMs: 60_000, namespace });
      await older.set("a", { name: "A", age: 1 });
      await older.set("b", { name: "B" });
      await older.close();
      const cache = pipeline<User>({
        redis,
        ttlMs: 60_000,
        namespace,
        schema: z.object({ name: z.string(), age: z.number() }),
      });
      const asked: string[][] = [];
      const loadMany = (missing: readonly unknown[]) => {
        asked.push(missing.map(String));
        return Promise.resolve(
          missing.map((id) => (id === "c" ? { name: "C", age: "old" } : { name: String(id), age: 2 })),
        );
      };
      await rejects(() => cache.getMany(["a", "b", "c"], loadMany as never), SchemaError, /at \$\.age/);
      assert.equal(asked, [["b", "c"]], "a was served; b's stored value was invalid, so loaded again");
      assert.is(cache.stats().invalid, 1);
      assert.equal(await cache.getMany(["a", "b"], () => Promise.reject(new Error("never"))), [{ name: "A", age: 1 }, {
        name: "b",
        age: 2,
      }]);
      assert.is(await db.redis.send(["EXISTS", cache.keys("c").data]), 0);
      await cache.close();
    },
  );
}

Schema(
  "warm() validates as get does: a stored bad value is reloaded, a loaded bad one counts failed and is not stored",
  async () => {
    const namespace = db.ns();
    const older = pipeline<unknown>({ redis: db.other, ttlMs: 60_000, namespace });
    await older.set("good", { name: "G", age: 1 });
    await older.set("stale-shape", { name: "S" });
    await older.close();
    const cache = pipeline<User>({
      redis: db.redis,
      ttlMs: 60_000,
      namespace,
      schema: z.object({ name: z.string(), age: z.number() }),
    });
    const loaded: string[] = [];
    const report = await cache.warm(["good", "stale-shape", "bad"], ({ identity }) => {
      loaded.push(String(identity));
      const value = identity === "bad" ? { name: "B", age: "old" } : { name: String(identity), age: 2 };
      return value as User;
    });
    assert.equal(report, { loaded: 1, fresh: 1, failed: 1 });
    assert.equal(
      loaded.sort(),
      ["bad", "stale-shape"],
      "the good entry was fresh; the one of the wrong shape reloaded",
    );
    assert.is(cache.stats().invalid, 1);
    assert.is(await db.redis.send(["EXISTS", cache.keys("bad").data]), 0, "the refused value was not stored");
    const reloaded = await cache.get("stale-shape", () => Promise.reject(new Error("never")));
    assert.equal(reloaded, { name: "stale-shape", age: 2 });
    await cache.close();
  },
);

Schema("set() refuses a value the schema refuses; a schema that is not one is refused at pipeline()", async () => {
  const cache = pipeline<User>({
    redis: db.redis,
    ttlMs: 60_000,
    namespace: db.ns(),
    schema: v.object({ name: v.string(), age: v.number() }),
  });
  await rejects(() => cache.set("u", { name: "x", age: "1" } as never), SchemaError, /the value at \$\.age/);
  assert.is(await db.redis.send(["EXISTS", cache.keys("u").data]), 0);
  await cache.set("u", { name: "x", age: 1 });
  assert.equal(await cache.peek("u"), { name: "x", age: 1 });
  await cache.close();
  assert.throws(
    () => pipeline({ redis: db.redis, ttlMs: 1000, schema: { parse() {} } as never }),
    (e: unknown) =>
      e instanceof TypeError &&
      /^Cannot create pipeline: 'schema' must be a Standard Schema/.test((e as Error).message),
  );
});

Schema("a schema that throws refuses the value as one issue", async () => {
  const throwing: StandardSchemaV1<unknown, string> = {
    "~standard": {
      version: 1,
      vendor: "test",
      validate() {
        throw new Error("boom");
      },
    },
  };
  const cache = pipeline<string>({ redis: db.redis, ttlMs: 60_000, namespace: db.ns(), schema: throwing });
  await rejects(
    () => cache.get("k", () => "v"),
    SchemaError,
    /the schema refused the value at \$ \(the schema threw: boom\)$/,
  );
  await cache.close();
});

Schema.run();
