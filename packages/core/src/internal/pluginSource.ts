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
      readonly overrides?: ReadonlyArray<ManifestOverrides.ManifestChange> | undefined
    }
  | {
      readonly kind: "skill"
      readonly path: string
      readonly overrides?: ReadonlyArray<ManifestOverrides.ManifestChange> | undefined
    }
