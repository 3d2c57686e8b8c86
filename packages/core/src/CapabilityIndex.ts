/**
 * Lexical relevance ranking of discoverable plugins for `list_capabilities`' `query`: BM25F
 * (Robertson & Zaragoza) over a plugin's name, title, summary, whenToUse, tags and examples'
 * user messages, each field with its own weight and length normalisation, fields combined by
 * dis-max and query words weighted by IDF. Each result also carries a `relevance` that, unlike
 * the score, does not grow with the catalog (for "is anything relevant at all" decisions).
 * Text is split on snake/kebab/camel case, a small stop list is dropped and words are reduced by
 * a light English stemmer, so that "forecasts" finds "forecast" and `get_weather` finds "weather".
 *
 * The index keeps each example's terms apart so that a leave-one-out evaluation can rank as if
 * one example had never been written (`leaveOneOut`), exactly and without rebuilding.
 */

import type { CapabilityIndex } from "./internal/capabilityIndex.js"
import type { Catalog } from "./internal/catalog/model.js"

export * from "./internal/capabilityIndex.js"

/**
 * The index of a catalog's discoverable plugins: its `CatalogIndex.capabilities`, built on first
 * use and kept on the catalog.
 */
export const forCatalog = (catalog: Catalog): CapabilityIndex => catalog.index.capabilities
