/**
 * @plugboard/testing — the shared conformance suites of core's ports, run under vitest. An
 * adapter author runs the suite of a port against their implementation, at the top level of a
 * test file (`CheckpointerConformance.run("mine", () => makeMine())`), and it registers the
 * `describe`/`it` blocks every implementation of that port must pass: the in-memory ones in
 * `@plugboard/core` and every adapter run the same suites. Imports vitest and fast-check (its peer
 * dependencies), which is why it is a package of its own and not part of `@plugboard/core`.
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
