/**
 * The Standard Schema interface (version 1), declared here so that a
 * pipeline's `schema` option takes any library that implements it (zod,
 * valibot, arktype...) without herdless depending on one. Types only: what
 * herdless calls is `schema["~standard"].validate(value)`.
 *
 * @module
 */

/**
 * A schema in the Standard Schema sense: an object whose `~standard`
 * property validates a value, synchronously or not.
 *
 * @typeParam Input what the schema accepts (what the loader returns and Redis stores).
 * @typeParam Output what it makes of it (what callers get).
 */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  /** The interface's properties, under a name no library uses for anything else. */
  readonly "~standard": StandardSchemaProps<Input, Output>;
}

/** What a {@linkcode StandardSchemaV1} offers. */
export interface StandardSchemaProps<Input = unknown, Output = Input> {
  /** The version of the interface: 1. */
  readonly version: 1;
  /** The library that made the schema ("zod", "valibot"...). */
  readonly vendor: string;
  /** Validate `value`: the output, or the issues found; a promise for an asynchronous schema. */
  readonly validate: (value: unknown) => StandardSchemaResult<Output> | Promise<StandardSchemaResult<Output>>;
  /** The schema's types, for inference only (never read at run time). */
  readonly types?: { readonly input: Input; readonly output: Output } | undefined;
}

/** What {@linkcode StandardSchemaProps.validate} resolves: the output, or the issues. */
export type StandardSchemaResult<Output> =
  | { readonly value: Output; readonly issues?: undefined }
  | { readonly issues: readonly StandardSchemaIssue[] };

/** One problem a schema found in a value. */
export interface StandardSchemaIssue {
  /** What is wrong, in the library's words. */
  readonly message: string;
  /** Where in the value: keys, or segments carrying a key, from the root. */
  readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined;
}
