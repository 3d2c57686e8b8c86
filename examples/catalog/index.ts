/**
 * The examples' catalog, 55 plugins and 124 tools: the reference `weather` plugin and 50 more
 * on-demand plugins across distinct domains, two `always` plugins (`notes`, `clock`), a plugin with
 * mixed per-tool visibility (`user-preferences`: on-demand, with one `always` tool) and a silent
 * middleware-only plugin (`audit-log`).
 *
 * This is the module `plugboard serve` and `plugboard inspect` load when given none: it exports
 * the plugins as `default` and as `plugins`, and the built catalog as `exampleCatalog`.
 *
 * Every handler answers from small in-file tables: no network, no randomness, and no clock
 * unless one is injected (`makeExamplePlugins({ now })`). Mutating tools keep their state in one
 * store per catalog (`ExampleStore`).
 */
import { Catalog, type Plugin } from "@plugboard/core"
import { weather } from "../plugins/weather.js"
import { businessPlugins } from "./business.js"
import { devtoolsPlugins } from "./devtools.js"
import { essentialPlugins } from "./essentials.js"
import { homePlugins } from "./home.js"
import { knowledgePlugins } from "./knowledge.js"
import { lifePlugins } from "./life.js"
import { marketsPlugins } from "./markets.js"
import { operationsPlugins } from "./operations.js"
import { type ExampleOptions, ExampleStore } from "./support.js"
import { travelPlugins } from "./travel.js"
import { webopsPlugins } from "./webops.js"

export { AUDIT_LOG_LIMIT, type AuditRecord, auditRecords, DEFAULT_PREFERENCES } from "./essentials.js"
export { type ExampleOptions, ExampleStore } from "./support.js"

/**
 * A fresh set of the example plugins over their own store. Pass `now` to pin the clock (tests),
 * or a `store` to inspect what the mutating tools wrote.
 */
export const makeExamplePlugins = (options: ExampleOptions = {}): ReadonlyArray<Plugin> => {
  const ctx = { store: options.store ?? new ExampleStore(), now: options.now ?? (() => new Date()) }
  return [
    ...essentialPlugins(ctx),
    weather,
    ...businessPlugins(ctx),
    ...operationsPlugins(ctx),
    ...devtoolsPlugins(ctx),
    ...webopsPlugins(),
    ...knowledgePlugins(ctx),
    ...marketsPlugins(),
    ...travelPlugins(),
    ...lifePlugins(ctx),
    ...homePlugins(ctx)
  ]
}

/** The example plugins, on the system clock and one shared store. */
export const examplePlugins: ReadonlyArray<Plugin> = makeExamplePlugins()

/** The catalog built from `examplePlugins` (throws at import if a manifest breaks a hard rule). */
export const exampleCatalog: Catalog.Catalog = Catalog.unsafeMake(examplePlugins)

/** What `plugboard serve` / `inspect` read from a plugin module. */
export const plugins = examplePlugins
export default examplePlugins
