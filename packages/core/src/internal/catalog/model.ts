/**
 * The `Catalog` value (docs/spec/catalog.md): its entries in dependency order, the maps the hot
 * path reads, and its `CatalogIndex`. Every query module imports the type from here; the
 * `Catalog` namespace re-exports it with `make`.
 */
import type { CatalogIndex } from "../../CatalogIndex.js"
import { META_TOOL_NAMES } from "../metaTools.js"
import type { CatalogEntry, CatalogSubAgent, CatalogTool, OwnedMiddleware } from "./entry.js"

/** The catalog: entries in dependency order plus the indexes the hot path needs. */
export interface Catalog {
  /** Plugins sorted so that each comes after everything it `dependsOn`; ties keep input order. */
  readonly entries: ReadonlyArray<CatalogEntry>
  readonly byName: ReadonlyMap<string, CatalogEntry>
  readonly toolsByName: ReadonlyMap<string, CatalogTool>
  /** Tools with effective visibility `always`, ordered by plugin name then declaration. */
  readonly alwaysTools: ReadonlyArray<CatalogTool>
  /** Soft manifest violations, each line `[boot-warning] ...`. */
  readonly warnings: ReadonlyArray<string>
  /**
   * Every plugin middleware in catalog (dependency) order, each plugin's `middlewares` before its
   * `getMiddlewares()`: the order they run around a model call (docs/spec/pipeline.md#the-model-call).
   */
  readonly middlewares: ReadonlyArray<OwnedMiddleware>
  /** Every boot-time sub-agent (`getSubAgents`), in catalog order. */
  readonly subAgents: ReadonlyArray<CatalogSubAgent>
  /** Entries whose plugin has per-request hooks, in catalog order: what a request must run. */
  readonly withRequestHooks: ReadonlyArray<CatalogEntry>
  /**
   * The names `make` was given in `reservedToolNames` (a host's own tools): no plugin tool takes
   * them, at boot or per request. The meta-tools' names are reserved apart (`RESERVED_TOOL_NAMES`).
   */
  readonly hostReservedToolNames?: ReadonlySet<string> | undefined
  /**
   * Entries whose plugin has `getSharedState`, in catalog order: the order a host reads them in,
   * so a plugin's hook runs after those of the plugins it `dependsOn`. See `mergeSharedState`.
   */
  readonly withSharedState: ReadonlyArray<CatalogEntry>
  /**
   * What the queries derive from the catalog (sorted listings, name indexes, the capability
   * index, the Tier-1 block, the offer's prefix, the views per grants), built by `make` with the
   * catalog: cheap parts at once, costly ones on first use and kept there.
   */
  readonly index: CatalogIndex
}

/** Tool names the runtime registers itself (docs/spec/catalog.md#tool-names); no plugin may take them. */
export const RESERVED_TOOL_NAMES: ReadonlyArray<string> = META_TOOL_NAMES
