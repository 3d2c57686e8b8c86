/**
 * `@plugboard/ai-sdk` — a plugboard catalog for agents built on the Vercel AI SDK (`ai` 6 or 7):
 * the meta-tools and the offered tools as AI SDK tools, the per-step offer through `prepareStep`,
 * the Tier-1 block in the system prompt, and core's gate (docs/ai-sdk.md).
 */
export {
  type CatalogTurn,
  makeTurn,
  type QueryRanking,
  type StepSettings,
  type TurnDeps,
  type TurnOptions
} from "./CatalogTurn.js"
export type {
  PluginsLoadedEvent,
  ToolCallEvent,
  ToolEndEvent,
  TurnCallbacks
} from "./Events.js"
export type { SdkTool, SdkToolOptions } from "./internal/toolSet.js"
export { loadedFromMessages, type ToolResultMessage } from "./LoadedFromMessages.js"
export { createPlugboard, type Plugboard, type PlugboardOptions, type PluginSource } from "./Plugboard.js"
export { ToolAnswerError } from "./ToolAnswerError.js"
