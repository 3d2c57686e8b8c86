/**
 * What one model call is offered, and what happens when the model calls a tool it was not
 * offered. The order is stable (DESIGN.md): meta-tools, always-tier tools, then the on-demand
 * tools of loaded plugins in load order, then per-request tools. Loading only appends, so the
 * prefix a provider caches survives a load.
 */
import { Data } from "effect"
import * as CapabilityIndex from "./CapabilityIndex.js"
import type { Catalog, CatalogEntry, CatalogTool } from "./Catalog.js"
import type * as LoadedPlugins from "./LoadedPlugins.js"
import * as MetaTools from "./MetaTools.js"
import type { JsonSchema } from "./Plugin.js"

/** A tool as a model call receives it. */
export interface OfferedTool {
  readonly name: string
  /** For plugin tools: `[<manifest.title>] <description>`. */
  readonly description: string
  readonly parameters: JsonSchema
  /** `meta`: a runtime meta-tool; `plugin`: a catalog tool; `request`: a per-request tool. */
  readonly kind: "meta" | "plugin" | "request"
  /** The owning plugin, for `plugin` and (when known) `request` tools. */
  readonly plugin?: string
}

/** The decision for a tool call: run it, or answer the model with `message` instead. */
export type GateDecision = Data.TaggedEnum<{
  /** The tool was offered on this call: run it. */
  Offered: { readonly tool: OfferedTool }
  /** The tool belongs to a discoverable plugin that is not loaded in this thread. */
  NotLoaded: { readonly plugin: string; readonly tool: string; readonly message: string }
  /** The tool is internal (silent plugin or silent tool): never callable by the model. */
  Silent: { readonly plugin: string; readonly tool: string; readonly message: string }
  /** No tool of that name is offered or registered. */
  Unknown: { readonly tool: string; readonly suggestions: ReadonlyArray<string>; readonly message: string }
}>

/** Constructors and matchers of `GateDecision` (`GateDecision.$match`, `GateDecision.$is`). */
export const GateDecision = Data.taggedEnum<GateDecision>()

/** Turns a catalog tool into the offered shape. */
export const fromCatalogTool = (tool: CatalogTool): OfferedTool => ({
  name: tool.name,
  description: tool.description,
  parameters: tool.parameters,
  kind: "plugin",
  plugin: tool.plugin
})

interface Precomputed {
  /** Meta-tools then always-tier tools: the part of every offer that never changes. */
  readonly prefix: ReadonlyArray<OfferedTool>
  readonly prefixNames: ReadonlySet<string>
  /** Offered shapes of each plugin's on-demand tools, filled on first load of that plugin. */
  readonly onDemand: Map<string, ReadonlyArray<OfferedTool>>
}

const cache = new WeakMap<Catalog, Precomputed>()

const precomputed = (catalog: Catalog): Precomputed => {
  let p = cache.get(catalog)
  if (p === undefined) {
    const prefix = [...MetaTools.definitions, ...catalog.alwaysTools.map(fromCatalogTool)]
    p = { prefix, prefixNames: new Set(prefix.map((t) => t.name)), onDemand: new Map() }
    cache.set(catalog, p)
  }
  return p
}

const onDemandOf = (p: Precomputed, entry: CatalogEntry): ReadonlyArray<OfferedTool> => {
  let tools = p.onDemand.get(entry.name)
  if (tools === undefined) {
    tools = entry.onDemandTools.map(fromCatalogTool)
    p.onDemand.set(entry.name, tools)
  }
  return tools
}

/**
 * The tools one model call is given, in the stable order. Names in `loadedPlugins` that the
 * catalog does not know, or that are silent, are ignored; a name loaded twice counts once.
 * An `extra` tool whose name is already offered is dropped (the catalog tool wins): providers
 * reject duplicate tool names, and per-request tools must not shadow catalog tools.
 */
export const offer = (
  catalog: Catalog,
  loadedPlugins: LoadedPlugins.LoadedPlugins,
  extra: ReadonlyArray<OfferedTool> = []
): ReadonlyArray<OfferedTool> => {
  const p = precomputed(catalog)
  const out = p.prefix.slice()
  const seen = loadedPlugins.length > 1 ? new Set<string>() : undefined
  for (const name of loadedPlugins) {
    if (seen !== undefined) {
      if (seen.has(name)) continue
      seen.add(name)
    }
    const entry = catalog.byName.get(name)
    if (entry === undefined || !entry.discoverable) continue
    for (const tool of onDemandOf(p, entry)) out.push(tool)
  }
  if (extra.length > 0) {
    const names = new Set(out.map((t) => t.name))
    for (const tool of extra) {
      if (names.has(tool.name)) continue
      names.add(tool.name)
      out.push(tool)
    }
  }
  return out
}

/** The message telling the model which plugin to load before calling `tool`. */
export const notLoadedMessage = (tool: string, plugin: string): string =>
  `Tool '${tool}' is not available yet: it belongs to plugin '${plugin}', which is not loaded in this ` +
  `conversation. Call ${MetaTools.LOAD_CAPABILITY} with {"names": ["${plugin}"]}, then call '${tool}' again.`

/**
 * Decides a tool call against what was offered on that model call. Only an offered tool runs;
 * otherwise the model is told what to do: load the owning plugin, not use an internal tool, or
 * pick one of the closest names. Silent plugins are never named in suggestions.
 */
export const gate = (
  catalog: Catalog,
  offered: ReadonlyArray<OfferedTool>,
  toolName: string
): GateDecision => {
  for (const tool of offered) if (tool.name === toolName) return GateDecision.Offered({ tool })
  const owned = catalog.toolsByName.get(toolName)
  if (owned !== undefined) {
    const entry = catalog.byName.get(owned.plugin)
    if (entry === undefined || !entry.discoverable || owned.visibility === "silent") {
      return GateDecision.Silent({
        plugin: owned.plugin,
        tool: toolName,
        message: `Tool '${toolName}' is internal to the runtime and cannot be called by the assistant.`
      })
    }
    return GateDecision.NotLoaded({
      plugin: owned.plugin,
      tool: toolName,
      message: notLoadedMessage(toolName, owned.plugin)
    })
  }
  const candidates = new Set<string>(offered.map((t) => t.name))
  for (const entry of catalog.entries) {
    if (!entry.discoverable) continue
    for (const t of entry.tools) if (t.visibility !== "silent") candidates.add(t.name)
  }
  const suggestions = CapabilityIndex.closestNames(toolName, candidates, 3)
  const hint =
    suggestions.length > 0 ? ` Closest tool names: ${suggestions.map((s) => `'${s}'`).join(", ")}.` : ""
  return GateDecision.Unknown({
    tool: toolName,
    suggestions,
    message:
      `There is no tool named '${toolName}'.${hint} ` +
      `Call ${MetaTools.LIST_CAPABILITIES} to discover plugins, then ${MetaTools.LOAD_CAPABILITY} to make their tools available.`
  })
}
