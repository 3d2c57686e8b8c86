/**
 * @plugboard/core/testing — the shared conformance suites of core's ports, run under vitest
 * against every implementation. Imports vitest, so it is a separate entry from `@plugboard/core`.
 */

export * as AuthConformance from "./AuthConformance.js"
export * as ChatModelConformance from "./ChatModelConformance.js"
export * as CheckpointerConformance from "./CheckpointerConformance.js"
export * as ClockConformance from "./ClockConformance.js"
export * as CodeSandboxConformance from "./CodeSandboxConformance.js"
export * as ConnectionStoreConformance from "./ConnectionStoreConformance.js"
export * as CreditLedgerConformance from "./CreditLedgerConformance.js"
export * as EmbedderConformance from "./EmbedderConformance.js"
export * as EventSinkConformance from "./EventSinkConformance.js"
export * from "./Factory.js"
export * as LoadedPluginsStoreConformance from "./LoadedPluginsStoreConformance.js"
export * as MatrixSyncConformance from "./MatrixSyncConformance.js"
export * as RateLimiterConformance from "./RateLimiterConformance.js"
export * as ReplayGuardConformance from "./ReplayGuardConformance.js"
export * as RunStoreConformance from "./RunStoreConformance.js"
export * from "./SessionStoreConformance.js"
export * as TokenCounterConformance from "./TokenCounterConformance.js"
export * as TurnControlConformance from "./TurnControlConformance.js"
export * as TurnLockConformance from "./TurnLockConformance.js"
export * as WaitStoreConformance from "./WaitStoreConformance.js"
