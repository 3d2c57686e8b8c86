/**
 * The catalog built once at boot from the plugins: every manifest validated, names unique, one
 * flat tool namespace, `dependsOn` sorted topologically. Queries on it are pure functions.
 */
import type { JsonSchema, Plugin, PluginTool } from "./Plugin.js"
import type { PluginManifest, Visibility } from "./PluginManifest.js"

/** A tool as the catalog resolved it: owner, effective visibility, offered description/schema. */
export interface CatalogTool {
  readonly name: string
  readonly plugin: string
  /** The description the model sees: `[<manifest.title>] <description>`. */
  readonly description: string
  readonly visibility: Visibility
  /** JSON Schema of the arguments, derived once at boot. */
  readonly parameters: JsonSchema
  readonly tool: PluginTool
}

/** A plugin as the catalog resolved it. */
export interface CatalogEntry {
  readonly name: string
  readonly plugin: Plugin
  readonly manifest: PluginManifest
  /** `manifest.visibility`, defaulting to `on-demand`. */
  readonly visibility: Visibility
  /** Every tool (boot-time `tools` + `getTools()`), in declaration order. */
  readonly tools: ReadonlyArray<CatalogTool>
  /** Tools offered only once the plugin is loaded (effective visibility `on-demand`). */
  readonly onDemandTools: ReadonlyArray<CatalogTool>
  /** Listed by `list_capabilities` and accepted by `load_capability`: not silent. */
  readonly discoverable: boolean
}

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
}
