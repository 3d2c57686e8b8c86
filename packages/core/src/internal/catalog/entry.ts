/**
 * A plugin, tool, sub-agent and middleware as the catalog resolved them (docs/spec/catalog.md):
 * the types every catalog query reads. Kept apart from the `Catalog` value so that what is
 * built from entries (`CatalogIndex`, the capability index) does not depend on the catalog.
 */

import type * as ManifestOverrides from "../../ManifestOverrides.js"
import type { JsonSchema, Plugin, PluginMiddleware, PluginTool, SubAgentSpec } from "../../Plugin.js"
import type { PluginManifest, Visibility } from "../../PluginManifest.js"
import type { ToolSpec } from "../../ToolSpec.js"
import type { Capability } from "../capability.js"
import type { PluginSource } from "../pluginSource.js"

/** A tool as the catalog resolved it: its spec as offered, owner, effective visibility. */
export interface CatalogTool extends ToolSpec {
  readonly plugin: string
  /** The description the model sees: `[<manifest.title>] <description>`. */
  readonly description: string
  readonly visibility: Visibility
  /** JSON Schema of the arguments, derived once at boot. */
  readonly parameters: JsonSchema
  readonly tool: PluginTool
  /** The tool's own `requires` (checked), absent when it declares none; the plugin's apply too. */
  readonly requires?: ReadonlyArray<Capability> | undefined
  /** The tool's own `requiresApproval: true` (checked); absent otherwise. */
  readonly requiresApproval?: true | undefined
  /** The tool's own `destructiveHint: true` (an MCP tool's annotation); absent otherwise. */
  readonly destructiveHint?: true | undefined
}

/** A sub-agent as the catalog resolved it: its spec and the tool the model is offered for it. */
export interface CatalogSubAgent {
  readonly plugin: string
  readonly spec: SubAgentSpec
  /**
   * The sub-agent as a tool: `SubAgentInput` arguments, a handler that runs `spec.run`, the
   * `[<manifest.title>] ` prefix and the plugin's visibility (a sub-agent has no override).
   */
  readonly tool: CatalogTool
}

/** A middleware with the plugin it came from. */
export interface OwnedMiddleware {
  readonly plugin: string
  readonly middleware: PluginMiddleware
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
  /** Tools offered on every turn (effective visibility `always`), in declaration order. */
  readonly alwaysTools: ReadonlyArray<CatalogTool>
  /** Listed by `list_capabilities` and accepted by `load_capability`: not silent. */
  readonly discoverable: boolean
  /** Position in registration order (before the topological sort). */
  readonly index: number
  /** `middlewares` then `getMiddlewares()`, read once at boot. */
  readonly middlewares: ReadonlyArray<PluginMiddleware>
  /** `getSubAgents()`, read once at boot. */
  readonly subAgents: ReadonlyArray<CatalogSubAgent>
  /** The plugin has `getRequestTools` or `getRequestSubAgents`: they run on every request. */
  readonly hasRequestHooks: boolean
  /** The plugin has `getSharedState` (read by the host at boot: it may do I/O). */
  readonly hasSharedState: boolean
  /** `plugin.operatingGuide`, trimmed; absent when empty. Returned by `load_capability`. */
  readonly operatingGuide?: string | undefined
  /** Why the plugin cannot be used (`plugin.unavailable`): listed so, never loaded. */
  readonly unavailable?: string | undefined
  /** Where the plugin came from; absent for a TypeScript plugin. */
  readonly source?: PluginSource | undefined
  /** `plugin.requires`, checked: what a user must hold to use the plugin (`Access`). */
  readonly requires?: ReadonlyArray<Capability> | undefined
  /**
   * What operators' overrides changed in the plugin's manifest (`ManifestOverrides`): a derived
   * plugin's source overrides first (`source.overrides`), then `manifestOverrides`. `manifest`
   * is the effective manifest, after them all. Absent when nothing was overridden.
   */
  readonly overrides?: ReadonlyArray<ManifestOverrides.ManifestChange> | undefined
}
