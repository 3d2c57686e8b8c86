/**
 * @plugboard/core — the pure model and the ports of the plugboard plugin runtime.
 * Depends on `effect` only: no I/O, no LangChain, no Node APIs.
 */
export * as Catalog from "./Catalog.js"
export * as GraphState from "./GraphState.js"
export * as LoadedPlugins from "./LoadedPlugins.js"
export * from "./ManifestValidation.js"
export * from "./Plugin.js"
export * from "./PluginManifest.js"
export * from "./RuntimeContext.js"
export * as SessionStore from "./SessionStore.js"
export * as Auth from "./Auth.js"
export * as Clock from "./Clock.js"
export * as CreditLedger from "./CreditLedger.js"
export * as RateLimiter from "./RateLimiter.js"
export * as CapabilityIndex from "./CapabilityIndex.js"
export * as MetaTools from "./MetaTools.js"
export * as Offer from "./Offer.js"
export * as SystemPrompt from "./SystemPrompt.js"
export * as Tier1 from "./Tier1.js"
export * as TokenBudget from "./TokenBudget.js"
export * as TokenCounter from "./TokenCounter.js"
export * as EventSink from "./EventSink.js"
