/**
 * The host's catalog as turns take it: the one boot built, until a rebuild replaces it (an OAuth
 * server's tool list read at its first connect, `CatalogRelist.ts`, docs/oauth.md#the-tool-list).
 * A turn takes the catalog (and the ranking made for it) once, when it starts, and keeps it to its
 * end; a replacement is one assignment, so a turn sees the old pair or the new one, never a mix.
 */
import { type Catalog, Ranking, type RuntimeLogger } from "@plugboard/core"
import type { QueryRanking } from "@plugboard/langgraph"
import type { McpDescription, McpServerConfig } from "@plugboard/mcp"
import { Either } from "effect"
import type { Relist } from "./CatalogRelist.js"
import type { LoadedRanking } from "./QueryRanking.js"

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

/**
 * After an OAuth server's tool list was read at its first connect (`FirstListing.ts`): builds the
 * catalog again as boot built it (`relist`, `CatalogRelist.ts`), ranks it as boot ranked (fused
 * with the host's embedder when there is one; the previous ranking if the embedder fails), and
 * replaces the current pair for the turns that start after. A rebuild core refuses, or one that
 * leaves the plugin unavailable, still replaces (the reason now shows on the plugin) and is
 * logged; true when the server's plugin is offered.
 */
export const offerRelisted = async (
  cell: LiveCatalog,
  relist: Relist | undefined,
  fused: LoadedRanking | undefined,
  logger: RuntimeLogger,
  server: McpServerConfig,
  description: McpDescription
): Promise<boolean> => {
  if (relist === undefined) return false
  const before = cell.current()
  const rebuilt = relist(before.catalog, server, description)
  const next = Either.isRight(rebuilt) ? rebuilt.right : rebuilt.left.catalog
  let ranking: QueryRanking | undefined = Ranking.lexical(next)
  if (fused !== undefined) {
    const ranked = await fused.forCatalog(next)
    if (Either.isLeft(ranked))
      logger.warn(
        "the catalog rebuilt with an OAuth server's tools is ranked as before: its embedder failed",
        {
          server: server.name,
          error: ranked.left.message
        }
      )
    ranking = Either.isRight(ranked) ? ranked.right : before.ranking
  }
  cell.replace({ catalog: next, ranking })
  const entry = next.byName.get(server.name)
  if (Either.isLeft(rebuilt) || entry?.unavailable !== undefined) {
    logger.warn(Either.isLeft(rebuilt) ? rebuilt.left.reason : (entry?.unavailable ?? ""), {
      server: server.name,
      plugin: server.name
    })
    return false
  }
  logger.info("an OAuth server's plugin is offered: its tool list was read when a user connected", {
    server: server.name,
    plugin: server.name,
    tools: entry?.tools.length ?? 0
  })
  return true
}
