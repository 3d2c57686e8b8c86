/**
 * The shapes a model call is offered (`Offer`, which re-exports `OfferedTool` and `RequestTool`)
 * and the part of an offer that never changes turn to turn (`OfferPrefix`, kept on the
 * `CatalogIndex` and on each restricted `Access.View`). Apart from `Offer` so that the meta-tools
 * and the index can name them without importing the offer's rules.
 */
import type { Visibility } from "../PluginManifest.js"
import type { ToolSpec } from "../ToolSpec.js"
import type { Capability } from "./capability.js"
import type { CatalogTool } from "./catalog/entry.js"

/** A tool as a model call receives it: its spec, and where it comes from. */
export interface OfferedTool extends ToolSpec {
  /** For plugin tools: `[<manifest.title>] <description>`. */
  readonly description: string
  /** `meta`: a runtime meta-tool; `plugin`: a catalog tool; `request`: a per-request tool. */
  readonly kind: "meta" | "plugin" | "request"
  /** The owning plugin, for `plugin` and (when known) `request` tools. */
  readonly plugin?: string
}

/**
 * A tool that exists for one request only: a `getRequestTools` tool or a sub-agent, resolved
 * against its plugin (`Catalog.resolveRequestTool`, `Catalog.resolveSubAgent`, or a boot-time
 * sub-agent's `tool`) and turned into this shape by `fromRequestTool`. Adapters may extend it
 * with what they need to run the tool.
 */
export interface RequestTool {
  readonly plugin: string
  /** Effective visibility: the tool's override, else its plugin's; silent when the plugin is. */
  readonly visibility: Visibility
  /** What the model is given when the tool is offered (`kind: "request"`). */
  readonly offered: OfferedTool
  /** The tool's own `requires` (`Access`), on top of its plugin's. */
  readonly requires?: ReadonlyArray<Capability> | undefined
}

/** Turns a catalog tool into the offered shape. */
export const fromCatalogTool = (tool: CatalogTool): OfferedTool => ({
  name: tool.name,
  description: tool.description,
  parameters: tool.parameters,
  kind: "plugin",
  plugin: tool.plugin
})

/** Meta-tools then always-tier tools, and each loaded plugin's on-demand tools as offered. */
export interface OfferPrefix {
  /** Meta-tools then always-tier tools: the part of every offer that never changes. */
  readonly prefix: ReadonlyArray<OfferedTool>
  readonly prefixNames: ReadonlySet<string>
  /** Offered shapes of each plugin's on-demand tools, filled on first load of that plugin. */
  readonly onDemand: Map<string, ReadonlyArray<OfferedTool>>
}
