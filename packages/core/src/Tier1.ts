/**
 * The Tier-1 prompt block (docs/spec/tiers.md#the-tier-1-block): one line per `always` plugin, then the hint that the rest
 * is discovered with the meta-tools. On-demand and silent plugins never appear in it.
 */
import type * as Access from "./Access.js"
import * as CatalogIndex from "./CatalogIndex.js"
import type { Catalog } from "./internal/catalog/model.js"

export { HEADING, HINT, line, renderEntries } from "./internal/tier1.js"

/**
 * The Tier-1 block of a catalog: deterministic and independent of registration order. With
 * zero always plugins it is the heading and the hint only. Built once per catalog
 * (`CatalogIndex.tier1`).
 */
export const render = (catalog: Catalog): string => catalog.index.tier1

/**
 * The Tier-1 block as a user's `view` (`Access.view`) sees it: an always plugin the user may not
 * use is left out (its tools are not offered to them either). Built once per view
 * (`Access.View.index`).
 */
export const renderFor = (catalog: Catalog, view: Access.View | undefined): string =>
  view === undefined || view.open ? render(catalog) : CatalogIndex.ofView(catalog, view).tier1
