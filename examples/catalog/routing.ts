/**
 * Routing quality of a catalog, measured the way `plugboard inspect --eval` does (issue 5): each
 * manifest example's `user` message is a query whose right answer is its own plugin; all
 * discoverable plugins are ranked with `list_capabilities`' ranking (core's `CapabilityIndex`)
 * with that example left out of the index, and recall@1 / recall@5 count how often the plugin
 * comes first / in the top five.
 *
 * Run it on the examples' catalog: `pnpm tsx --conditions=@plugboard/source examples/catalog/routing.ts`
 */
import { pathToFileURL } from "node:url"
import { CapabilityIndex, type Catalog } from "@plugboard/core"

/** One example query that did not rank its plugin first. */
export interface RoutingMiss {
  readonly plugin: string
  readonly query: string
  /** 1-based rank of the right plugin, or `undefined` when it is not in the top five. */
  readonly rank: number | undefined
  /** The top five, best first. */
  readonly top: ReadonlyArray<string>
}

/** Leave-one-out recall of a catalog's manifest examples. */
export interface RoutingReport {
  readonly queries: number
  readonly recallAt1: number
  readonly recallAt5: number
  readonly misses: ReadonlyArray<RoutingMiss>
}

/** Ranks every manifest example of every discoverable plugin against the catalog, leaving it out. */
export const evaluateRouting = (catalog: Catalog.Catalog): RoutingReport => {
  const index = CapabilityIndex.forCatalog(catalog)
  let queries = 0
  let at1 = 0
  let at5 = 0
  const misses: Array<RoutingMiss> = []
  for (const entry of catalog.entries) {
    if (!entry.discoverable) continue
    ;(entry.manifest.examples ?? []).forEach((example, i) => {
      const top = CapabilityIndex.rank(CapabilityIndex.leaveOneOut(index, entry.name, i), example.user, {
        limit: 5
      }).map((r) => r.name)
      const at = top.indexOf(entry.name)
      queries++
      if (at === 0) at1++
      if (at >= 0) at5++
      if (at !== 0)
        misses.push({ plugin: entry.name, query: example.user, rank: at < 0 ? undefined : at + 1, top })
    })
  }
  return {
    queries,
    recallAt1: queries === 0 ? 0 : at1 / queries,
    recallAt5: queries === 0 ? 0 : at5 / queries,
    misses
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const { exampleCatalog } = await import("./index.js")
  const report = evaluateRouting(exampleCatalog)
  console.log(
    `${report.queries} example queries: recall@1 ${report.recallAt1.toFixed(3)}, recall@5 ${report.recallAt5.toFixed(3)}`
  )
  for (const m of report.misses) {
    console.log(
      `  ${m.rank === undefined ? "miss" : `#${m.rank}`}  ${m.plugin}: "${m.query}" -> ${m.top.join(", ")}`
    )
  }
}
