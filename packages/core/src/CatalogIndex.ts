/**
 * What the catalog's queries derive from it, in one place: `Catalog.make` builds the index with
 * the catalog and every catalog carries its own (`catalog.index`). What is cheap is computed at
 * boot; what costs (the capability index, the name indexes, the Tier-1 text, the offer's prefix)
 * is built on its first read and kept on the index object, so a boot that never ranks a query
 * never pays for ranking. A user's `Access.View` that denies or hides something holds its own
 * `ViewIndex`, made the same way (`ofView`).
 *
 * Nothing here is a rule: each structure is what a query module (named on each field) would
 * otherwise recompute on every turn.
 */

import * as Capabilities from "./internal/capabilityIndex.js"
import type { CatalogEntry, CatalogSubAgent, CatalogTool } from "./internal/catalog/entry.js"
import { definitions } from "./internal/metaTools.js"
import { makeNameIndex, type NameIndex } from "./internal/nameIndex.js"
import { fromCatalogTool, type OfferPrefix } from "./internal/offered.js"
import { alwaysSections } from "./internal/promptSections.js"
import { renderEntries } from "./internal/tier1.js"
import type { View, ViewIndex } from "./internal/view.js"

export type { ViewIndex } from "./internal/view.js"

/** The derived structures of one catalog. */
export interface CatalogIndex {
  /** Whether any plugin or tool declares `requires`: when none does, every view is open (`Access.view`). */
  readonly gated: boolean
  /** Discoverable entries sorted by name: `list_capabilities` without a query (`MetaTools`). */
  readonly discoverableByName: ReadonlyArray<CatalogEntry>
  /** The discoverable plugins' names, for `load_capability`'s "closest names" (`MetaTools`). */
  readonly pluginNames: NameIndex
  /** The names of every tool the model could call, never a silent one, for `Offer.gate`'s suggestions. */
  readonly toolNames: NameIndex
  /** The relevance index of the discoverable plugins (`CapabilityIndex.forCatalog`). */
  readonly capabilities: Capabilities.CapabilityIndex
  /** The Tier-1 block (`Tier1.render`). */
  readonly tier1: string
  /** The always-tier plugins' prompt sections, by name (`SystemPrompt.alwaysPromptSections`). */
  readonly alwaysSections: ReadonlyArray<string>
  /** The offer's fixed prefix, meta-tools then always-tier tools, and the on-demand tools offered so far (`Offer.offer`). */
  readonly offer: OfferPrefix
  /**
   * Names a per-request tool may not take: every catalog tool's and boot-time sub-agent's, each
   * with its plugin (`Catalog.resolveRequestTool`).
   */
  readonly takenNames: ReadonlyMap<string, string>
  /** The boot-time sub-agents' names, each with its plugin (`ClientTools.validate`). */
  readonly bootSubAgents: ReadonlyMap<string, string>
  /**
   * The restricted views made so far, by their canonical grants (`Access.view` fills it and keeps
   * it bounded: a host sees few kinds of user).
   */
  readonly views: Map<string, View>
}

/** What the index is built from: the parts of a `Catalog` that `make` has already computed. */
export interface Parts {
  readonly entries: ReadonlyArray<CatalogEntry>
  readonly toolsByName: ReadonlyMap<string, CatalogTool>
  readonly subAgents: ReadonlyArray<CatalogSubAgent>
  readonly alwaysTools: ReadonlyArray<CatalogTool>
}

const byName = (a: CatalogEntry, b: CatalogEntry) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)

const prefixOf = (always: ReadonlyArray<CatalogTool>): OfferPrefix => {
  const prefix = [...definitions, ...always.map(fromCatalogTool)]
  return { prefix, prefixNames: new Set(prefix.map((t) => t.name)), onDemand: new Map() }
}

/** The index; each lazy field is built on its first read and kept in its private slot. */
class Index implements CatalogIndex {
  readonly gated: boolean
  readonly views = new Map<string, View>()
  #discoverableByName: ReadonlyArray<CatalogEntry> | undefined
  #pluginNames: NameIndex | undefined
  #toolNames: NameIndex | undefined
  #capabilities: Capabilities.CapabilityIndex | undefined
  #tier1: string | undefined
  #alwaysSections: ReadonlyArray<string> | undefined
  #offer: OfferPrefix | undefined
  #takenNames: ReadonlyMap<string, string> | undefined
  #bootSubAgents: ReadonlyMap<string, string> | undefined

  readonly #parts: Parts

  constructor(parts: Parts) {
    this.#parts = parts
    this.gated = parts.entries.some(
      (e) => (e.requires?.length ?? 0) > 0 || e.tools.some((t) => (t.requires?.length ?? 0) > 0)
    )
  }
  get discoverableByName(): ReadonlyArray<CatalogEntry> {
    this.#discoverableByName ??= this.#parts.entries.filter((e) => e.discoverable).sort(byName)
    return this.#discoverableByName
  }
  get pluginNames(): NameIndex {
    this.#pluginNames ??= makeNameIndex(this.#parts.entries.filter((e) => e.discoverable).map((e) => e.name))
    return this.#pluginNames
  }
  get toolNames(): NameIndex {
    if (this.#toolNames === undefined) {
      const names: Array<string> = []
      for (const entry of this.#parts.entries) {
        if (!entry.discoverable) continue
        for (const t of entry.tools) if (t.visibility !== "silent") names.push(t.name)
      }
      this.#toolNames = makeNameIndex(names)
    }
    return this.#toolNames
  }
  get capabilities(): Capabilities.CapabilityIndex {
    this.#capabilities ??= Capabilities.make(this.#parts.entries)
    return this.#capabilities
  }
  get tier1(): string {
    this.#tier1 ??= renderEntries(this.#parts.entries)
    return this.#tier1
  }
  get alwaysSections(): ReadonlyArray<string> {
    this.#alwaysSections ??= alwaysSections(this.#parts.entries)
    return this.#alwaysSections
  }
  get offer(): OfferPrefix {
    this.#offer ??= prefixOf(this.#parts.alwaysTools)
    return this.#offer
  }
  get takenNames(): ReadonlyMap<string, string> {
    if (this.#takenNames === undefined) {
      const names = new Map<string, string>()
      for (const [name, tool] of this.#parts.toolsByName) names.set(name, tool.plugin)
      for (const { tool } of this.#parts.subAgents) names.set(tool.name, tool.plugin)
      this.#takenNames = names
    }
    return this.#takenNames
  }
  get bootSubAgents(): ReadonlyMap<string, string> {
    this.#bootSubAgents ??= new Map(this.#parts.subAgents.map((s) => [s.tool.name, s.plugin]))
    return this.#bootSubAgents
  }
}

/** Builds the index of a catalog from the parts `Catalog.make` computed (only `gated` at once). */
export const make = (parts: Parts): CatalogIndex => new Index(parts)

/** A restricted view's index; each field is built on its first read. */
class ViewIndexOf implements ViewIndex {
  #tier1: string | undefined
  #alwaysSections: ReadonlyArray<string> | undefined
  #offer: OfferPrefix | undefined

  readonly #parts: Pick<Parts, "entries" | "alwaysTools">
  readonly #denied: ReadonlyMap<string, string>
  readonly #hiddenTools: ReadonlySet<string>

  constructor(
    parts: Pick<Parts, "entries" | "alwaysTools">,
    denied: ReadonlyMap<string, string>,
    hiddenTools: ReadonlySet<string>
  ) {
    this.#parts = parts
    this.#denied = denied
    this.#hiddenTools = hiddenTools
  }
  get tier1(): string {
    this.#tier1 ??= renderEntries(this.#parts.entries.filter((e) => !this.#denied.has(e.name)))
    return this.#tier1
  }
  get alwaysSections(): ReadonlyArray<string> {
    this.#alwaysSections ??= alwaysSections(this.#parts.entries, this.#denied)
    return this.#alwaysSections
  }
  get offer(): OfferPrefix {
    // An always-tier tool is offered when its plugin is not denied and the tool is not hidden.
    this.#offer ??= prefixOf(
      this.#parts.alwaysTools.filter((t) => !this.#denied.has(t.plugin) && !this.#hiddenTools.has(t.name))
    )
    return this.#offer
  }
}

/**
 * The index of a view that denies `denied` and hides `hiddenTools` in the catalog of `parts`
 * (`Access.view` makes one with each restricted view).
 */
export const makeView = (
  parts: Pick<Parts, "entries" | "alwaysTools">,
  denied: ReadonlyMap<string, string>,
  hiddenTools: ReadonlySet<string>
): ViewIndex => new ViewIndexOf(parts, denied, hiddenTools)

/**
 * The index of `view` over the catalog of `parts`: the one `Access.view` made with it, or, for
 * a view built by hand, a fresh one (kept nowhere).
 */
export const ofView = (parts: Pick<Parts, "entries" | "alwaysTools">, view: View): ViewIndex =>
  view.index ?? makeView(parts, view.denied, view.hiddenTools)
