// Bound by build.mjs at bundle time: the module exporting `pipeline`, or a
// stub whose `unavailable` says why there is none.
declare module "herdless:cache" {
  export const unavailable: string | undefined;
}
