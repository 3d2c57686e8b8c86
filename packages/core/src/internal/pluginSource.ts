/**
 * Where a plugin came from (`CatalogSource`, which re-exports it): named by `Plugin` and the
 * catalog's entries, so it lives apart from the derivation rules that import them.
 */
import type * as ManifestOverrides from "../ManifestOverrides.js"

/**
 * Where a plugin came from; a plugin without one was written in TypeScript. `overrides` is what
 * the source's operator override (an MCP server's `manifest`, a skill's `metadata.plugboard`)
 * changed in the derived manifest, for `plugboard inspect`.
 */
export type PluginSource =
  | {
      readonly kind: "mcp"
      readonly server: string
      /**
       * The MCP revision the server's description was negotiated on (`2026-07-28`, `2025-11-25`,
       * ...), fresh at boot or from the cache; absent when the server was not reached and nothing
       * was cached, or a cache written before revisions were kept.
       */
      readonly protocolVersion?: string | undefined
      readonly overrides?: ReadonlyArray<ManifestOverrides.ManifestChange> | undefined
    }
  | {
      readonly kind: "skill"
      readonly path: string
      readonly overrides?: ReadonlyArray<ManifestOverrides.ManifestChange> | undefined
    }
