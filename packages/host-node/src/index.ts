/**
 * `@plugboard/host-node`: the plugboard oracle server for Node — `createOracleApp` (request
 * pipeline, sessions, messages over SSE, config from the environment) and the silent `credits`
 * plugin. The `plugboard` CLI (`src/cli/main.ts`) is a thin wrapper around it.
 */
export {
  createOracleApp,
  type OracleApp,
  type OracleAppOptions,
  OracleBootError,
  type OracleHooks,
  type OracleIdentity
} from "./App.js"
export * as ServerConfig from "./Config.js"
export {
  type Ask,
  type ChatClient,
  ChatClientError,
  type ChatClientOptions,
  chatTurn,
  connectChat,
  type Decision,
  type ResumeEnd
} from "./cli/ChatClient.js"
export { eventPrinter, printEvent, readSse } from "./cli/Sse.js"
export {
  CREDITS_LEDGER_KEY,
  CREDITS_PLUGIN_NAME,
  type CreditsPluginOptions,
  creditsPlugin,
  DEFAULT_TOKENS_PER_CREDIT,
  makeCreditsPlugin
} from "./credits/CreditsPlugin.js"
export {
  type ConsoleLoggerOptions,
  consoleLogger,
  type LogLevel,
  makeConsoleLogger,
  quietLogger
} from "./Logger.js"
export { STAGES, type StageTimings } from "./Pipeline.js"
