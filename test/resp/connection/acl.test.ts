/**
 * A script's ACL failure, as Redis 7.0 and 7.2 word it, mapped to the
 * command its line calls. The servers' replies are real ones (7.0 from the
 * server the suites run; 7.2's text from its source): only the mapping is
 * under test here, the whole path runs in least_privilege.test.ts.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { explainNoPerm, explainScriptFailure, patternOf } from "../../../resp/connection/mod.ts";
import { RedisReplyError } from "../../../resp/errors.ts";
import { Script } from "../../../resp/script.ts";

const test = suite("ACL refusals explained");
const script = new Script("\nlocal v = redis.call('GET', KEYS[1])\nredis.call('PUBLISH', ARGV[1], KEYS[1])\nreturn v");
const keys = ["products:{abc}:data", "products:{abc}:lease"];

test("Redis 7.0: the command of the line the script failed on, and its rule", () => {
  const e = explainScriptFailure(
    new RedisReplyError(
      `ERR The user executing the script can't run this command or subcommand script: ${script.sha}, on @user_script:3.`,
    ),
    script,
    keys,
  );
  assert.is(e?.code, "NOPERM");
  assert.is(
    e?.message,
    `NOPERM the script ${script.sha} calls 'publish' at line 3 and this user may not run 'publish'; ` +
      "add '+publish' to the user's ACL rule",
  );
});

test("Redis 7.2: 'ACL failure in script', for a command, a key and a channel", () => {
  const at = (line: number, what: string) =>
    explainScriptFailure(
      new RedisReplyError(`ERR ACL failure in script: ${what} script: ${script.sha}, on @user_script:${line}.`),
      script,
      keys,
    )?.message;
  assert.match(at(3, "User key-user has no permissions to run the 'publish' command")!, /add '\+publish'/);
  assert.match(at(2, "No permissions to access a key")!, /calls 'get' at line 2 .* add '~products:\{\*'/);
  assert.match(at(3, "No permissions to access a channel")!, /calls 'publish' at line 3 .* add '&products:published'/);
});

test("another script's failure, or another error, is left alone", () => {
  const other = new RedisReplyError(
    "ERR The user executing the script can't run this command or subcommand script: " +
      `${"0".repeat(40)}, on @user_script:3.`,
  );
  assert.is(explainScriptFailure(other, script, keys), undefined);
  assert.is(explainScriptFailure(new RedisReplyError("ERR something else"), script, keys), undefined);
});

test("a direct NOPERM gets its rule once; key patterns come from the key's namespace", () => {
  const e = explainNoPerm(
    new RedisReplyError("NOPERM this user has no permissions to run the 'client|tracking' command"),
    "CLIENT",
  );
  assert.is(
    e.message,
    "NOPERM this user has no permissions to run the 'client|tracking' command; add '+client|tracking' to the user's ACL rule",
  );
  assert.is(explainNoPerm(e, "CLIENT"), e);
  // A namespace's pattern stops at its '{': 'app:{*' covers no key of namespace 'app:x'.
  assert.equal([patternOf("products:{x}:data"), patternOf("app:{}:epoch"), patternOf("app:x"), patternOf("plain")], [
    "products:{*",
    "app:{*",
    "app:*",
    "<pattern>",
  ]);
});

test.run();
