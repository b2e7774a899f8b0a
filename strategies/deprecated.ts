/**
 * Names of the strategy contract that the package root exported before it
 * had an entry of its own (`herdless/strategy`, `@herdless/herdless/strategy`
 * on JSR). They stay at the root for this release, so code importing them
 * from there keeps compiling; the next release drops them.
 *
 * @module
 */
import type { Entry as ContractEntry, Strategy as ContractStrategy } from "./contract.ts";

/**
 * A policy taking part in a `get`: see `Strategy` in `herdless/strategy`.
 *
 * @deprecated Import `Strategy` from `herdless/strategy` (`@herdless/herdless/strategy` on JSR); the root drops
 * it in the next release.
 */
export type Strategy = ContractStrategy;

/**
 * A cache entry judged at the moment of a read: see `Entry` in `herdless/strategy`.
 *
 * @deprecated Import `Entry` from `herdless/strategy` (`@herdless/herdless/strategy` on JSR); the root drops it in
 * the next release.
 */
export type Entry = ContractEntry;
