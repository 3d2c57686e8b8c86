/**
 * The warnings about a booted catalog, from one function: the catalog's own (`Catalog.make`'s
 * soft manifest problems) and core's oversized operating guides (`TokenBudget.guideWarnings`,
 * docs/plugins.md#operating-guides). `plugboard inspect` (`CatalogReport`), the server's boot log
 * (`CatalogBoot`: one warn line each, at boot), `/health/plugins` and the dev console's catalog
 * API all print this list, so none of them says less than another. The sources' own warnings (an
 * MCP config, a server, a skill folder) are not about the catalog and travel beside it.
 */
import { type Catalog, TokenBudget, TokenCounter } from "@plugboard/core"
import { cachedCounter, loadTiktokenCounter } from "@plugboard/tokenizers"

/** Every `[boot-warning]` line about `catalog`, its guides counted with `counter`. */
export const catalogWarnings = (
  catalog: Catalog.Catalog,
  counter: TokenCounter.TokenCounterService
): ReadonlyArray<string> => [
  ...catalog.warnings,
  ...TokenBudget.guideWarnings(TokenBudget.guideCosts(catalog, counter))
]

/** Whether `catalogWarnings` counts anything: a discoverable plugin has an operating guide. */
export const needsCounting = (catalog: Catalog.Catalog): boolean =>
  catalog.entries.some((e) => e.discoverable && e.operatingGuide !== undefined)

let defaultCounterP: Promise<TokenCounter.TokenCounterService> | undefined

/**
 * The server's counter: o200k, as `plugboard inspect` counts by default, loaded once per process;
 * should its ranks fail to load, the heuristic (whose `name` says so).
 */
export const defaultCounter = (): Promise<TokenCounter.TokenCounterService> => {
  defaultCounterP ??= loadTiktokenCounter("o200k").then(
    (c) => cachedCounter(c),
    () => TokenCounter.heuristic
  )
  return defaultCounterP
}

/**
 * `catalogWarnings` as a server boots: the counter (default `defaultCounter`) is only loaded when
 * there is a guide to count.
 */
export const bootWarnings = async (
  catalog: Catalog.Catalog,
  counter: () => Promise<TokenCounter.TokenCounterService> = defaultCounter
): Promise<ReadonlyArray<string>> =>
  needsCounting(catalog) ? catalogWarnings(catalog, await counter()) : catalog.warnings
