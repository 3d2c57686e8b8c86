/**
 * The host's catalog as turns take it: the one boot built, until a rebuild replaces it (an OAuth
 * server's tool list read at its first connect, `CatalogRelist.ts`, docs/oauth.md#the-tool-list).
 * A turn takes the catalog (and the ranking made for it) once, when it starts, and keeps it to its
 * end; a replacement is one assignment, so a turn sees the old pair or the new one, never a mix.
 */
import type { Catalog } from "@plugboard/core"
import type { QueryRanking } from "@plugboard/langgraph"

/** A catalog and the ranking made over it (lexical, or fused with the host's embedder). */
export interface CatalogNow {
  readonly catalog: Catalog.Catalog
  readonly ranking?: QueryRanking | undefined
}

/** The current catalog, replaced whole for the turns that start after. */
export interface LiveCatalog {
  readonly current: () => CatalogNow
  readonly replace: (next: CatalogNow) => void
}

/** A live catalog starting at `boot`. */
export const make = (boot: CatalogNow): LiveCatalog => {
  let now = boot
  return {
    current: () => now,
    replace: (next) => {
      now = next
    }
  }
}
