/**
 * The fill: the chains of the strategies' fill and load hooks, the origin
 * call and the publication of what it returned, the loader's choices, and
 * the background work a cache owns.
 *
 * @module
 */
export { BackgroundWork } from "./background.ts";
export { expireEntry } from "./expire_script.ts";
export { chained, type ChainedRequest, compose, composeLoad, runBatchOrigin, runOrigin } from "./chain.ts";
export { type ChoiceContext, LoaderChoices, ValueChoice } from "./loader_choices.ts";
export { isWriteRefusal, Publisher, type PublisherContext } from "./publisher.ts";
export { checkTags } from "./tags.ts";
