/**
 * `@plugboard/models`: LangChain chat models behind the `ChatModel` port. Real providers
 * (`openai`, `anthropic`, `ollama`, `openai-compatible`) chosen by `LLM_PROVIDER`, and the
 * deterministic offline `ScriptedChatModel` (script replay for tests, router for the demo),
 * `withCallBounds`, which aborts a model call that stalls, and `serveOpenAiWire`, which serves a
 * model (the scripted one, offline) as an OpenAI-compatible chat completions endpoint.
 */

export {
  BoundedChatModel,
  CALL_BOUND_VARIABLES,
  type CallBoundReason,
  type CallBounds,
  DEFAULT_CALL_BOUNDS,
  ModelCallTimeout,
  withCallBounds
} from "./CallBounds.js"
export {
  OpenAiWireError,
  type OpenAiWireErrorReason,
  type OpenAiWireOptions,
  type OpenAiWireServer,
  serveOpenAiWire
} from "./OpenAiWire.js"
export {
  chatModelFromEnv,
  fromLangChain,
  LangChainChatModel,
  type LangChainChatModelService,
  layerChatModel,
  layerChatModelConfig,
  settingsFromEnv,
  toLangChainMessages
} from "./Port.js"
export {
  installCommand,
  PEER_RANGES,
  type ProviderPackage,
  ProviderPackageMissing,
  type ProviderPackageName,
  providerPackage
} from "./ProviderSdks.js"
export {
  type ChatModelDeps,
  type ChatModelEnv,
  type ChatModelSettings,
  type ConfigProblem,
  DEFAULT_OLLAMA_BASE_URL,
  defaultModels,
  envConfig,
  makeChatModel,
  NO_KEY,
  type Provider,
  providers,
  resolveSettings
} from "./Providers.js"
export {
  adaptArgs,
  DEFAULT_THRESHOLD,
  decide,
  type RouterDecision,
  type RouterOptions,
  route,
  summariseOutput
} from "./Router.js"
export {
  type Counter,
  type Responder,
  ScriptExhaustedError,
  type ScriptedAction,
  type ScriptedCall,
  ScriptedChatModel,
  type ScriptedChatModelOptions,
  type ScriptedReasonedReply,
  type ScriptedReply,
  type ScriptedToolCall,
  type ScriptedTurn,
  type ScriptStep,
  splitAnswer,
  toolName
} from "./ScriptedChatModel.js"
