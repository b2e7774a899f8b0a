/**
 * The pipeline's `schema` at the two places it applies: a value a loader
 * returned, before it is stored (`fill/publisher.ts`), and a value decoded
 * from Redis, once, before it is judged or offered to the near tier
 * (`reader.ts`). A schema may answer synchronously or with a promise; the
 * result is awaited only when it is one, so a synchronous schema costs a
 * remote hit no await. A schema that throws counts as one issue.
 *
 * @module
 */
import type { StandardSchemaIssue, StandardSchemaResult, StandardSchemaV1 } from "../../schema.ts";

/** A result this module checked: the output, or the issues. */
export type SchemaVerdict =
  | { readonly value: unknown; readonly issues?: undefined }
  | { readonly issues: readonly StandardSchemaIssue[] };

/** Validate `value` with `schema`: the verdict, or a promise of it for an asynchronous schema. */
export function validate(schema: StandardSchemaV1, value: unknown): SchemaVerdict | Promise<SchemaVerdict> {
  let result: StandardSchemaResult<unknown> | Promise<StandardSchemaResult<unknown>>;
  try {
    result = schema["~standard"].validate(value);
  } catch (error) {
    return thrown(error);
  }
  if (typeof (result as { then?: unknown })?.then === "function") {
    return Promise.resolve(result).then(checked, thrown);
  }
  return checked(result as StandardSchemaResult<unknown>);
}

/** Whether `schema` has the shape of a Standard Schema (version 1). */
export function isStandardSchema(schema: unknown): schema is StandardSchemaV1 {
  const props = (schema as { "~standard"?: { version?: unknown; validate?: unknown } } | null)?.["~standard"];
  return typeof props === "object" && props !== null && props.version === 1 && typeof props.validate === "function";
}

function checked(result: StandardSchemaResult<unknown>): SchemaVerdict {
  if (result === null || typeof result !== "object") {
    return { issues: [{ message: `the schema's validate() returned ${result === null ? "null" : typeof result}` }] };
  }
  if (result.issues !== undefined) {
    return Array.isArray(result.issues) && result.issues.length > 0
      ? { issues: result.issues }
      : { issues: [{ message: "the schema reported issues it did not describe" }] };
  }
  return { value: result.value };
}

function thrown(error: unknown): SchemaVerdict {
  return { issues: [{ message: `the schema threw: ${error instanceof Error ? error.message : String(error)}` }] };
}
