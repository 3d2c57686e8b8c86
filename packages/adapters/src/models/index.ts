/**
 * `@plugboard/adapters/models`: LangChain chat models behind the `ChatModel` port. Real providers
 * (`openai`, `anthropic`, `ollama`, `openai-compatible`) chosen by `LLM_PROVIDER`, and the
 * deterministic offline `ScriptedChatModel` (script replay for tests, router for the demo).
 */

export * from "./Port.js"
export * from "./Providers.js"
export {
  adaptArgs,
  DEFAULT_THRESHOLD,
  type RouterOptions,
  route,
  routerResponder,
  summariseOutput
} from "./Router.js"
export * from "./ScriptedChatModel.js"
