/**
 * What one model call is offered, and what happens when the model calls a tool it was not
 * offered. The order is stable (docs/spec/tiers.md#the-offer): meta-tools, always-tier tools, then the on-demand
 * tools of loaded plugins in load order, then per-request tools. Loading only appends, so the
 * prefix a provider caches survives a load.
 *
 * Per-request tools (`getRequestTools`, and sub-agents) follow the same visibility rules as
 * catalog tools: `requestTools` decides which of them a thread is offered, and `gate` answers a
 * call to one that is not offered just as it answers a catalog tool.
 */
import { Data } from "effect"
import * as Access from "./Access.js"
import * as CatalogIndex from "./CatalogIndex.js"
import type { CatalogEntry, CatalogTool } from "./internal/catalog/entry.js"
import type { Catalog } from "./internal/catalog/model.js"
import { closestIn, MAX_SCORED_LENGTH } from "./internal/nameIndex.js"
import { fromCatalogTool, type OfferedTool, type OfferPrefix, type RequestTool } from "./internal/offered.js"
import { shown } from "./internal/text.js"
import * as LoadedPlugins from "./LoadedPlugins.js"
import * as MetaTools from "./MetaTools.js"

export type { OfferedTool, RequestTool } from "./internal/offered.js"

/** The decision for a tool call: run it, or answer the model with `message` instead. */
export type GateDecision = Data.TaggedEnum<{
  /** The tool was offered on this call: run it. */
  Offered: { readonly tool: OfferedTool }
  /** The tool belongs to a discoverable plugin that is not loaded in this thread. */
  NotLoaded: { readonly plugin: string; readonly tool: string; readonly message: string }
  /** The tool's plugin requires capabilities the user's credentials do not grant (`Access`). */
  NotGranted: { readonly plugin: string; readonly tool: string; readonly message: string }
  /** The tool is internal (silent plugin or silent tool): never callable by the model. */
  Silent: { readonly plugin: string; readonly tool: string; readonly message: string }
  /** No tool of that name is offered or registered. */
  Unknown: { readonly tool: string; readonly suggestions: ReadonlyArray<string>; readonly message: string }
}>

/** Constructors and matchers of `GateDecision` (`GateDecision.$match`, `GateDecision.$is`). */
export const GateDecision = Data.taggedEnum<GateDecision>()

// The enum's constructors are reached through a Proxy that makes a function on every access; the
// decision of every offered call (the hot one) keeps its own.
const offeredDecision = Data.tagged<Extract<GateDecision, { _tag: "Offered" }>>("Offered")

// One RequestTool per resolved tool: boot-time sub-agents keep the same object for every
// request, so adapters that cache per offered tool (tool definitions) translate them once.
// A pure memo of `fromRequestTool`, keyed on the (immutable) tool: no catalog's state.
const requestToolCache = new WeakMap<CatalogTool, RequestTool>()

/** The per-request shape of a resolved tool (cached per `CatalogTool` object). */
export const fromRequestTool = (tool: CatalogTool): RequestTool => {
  let out = requestToolCache.get(tool)
  if (out === undefined) {
    out = {
      plugin: tool.plugin,
      visibility: tool.visibility,
      offered: {
        name: tool.name,
        description: tool.description,
        parameters: tool.parameters,
        kind: "request",
        plugin: tool.plugin
      },
      ...(tool.requires === undefined ? {} : { requires: tool.requires })
    }
    requestToolCache.set(tool, out)
  }
  return out
}

/**
 * The per-request tools a thread is offered, in the order given: a tool whose effective
 * visibility is `always`, and an `on-demand` one once its plugin is in `loadedPlugins`. Never a
 * silent one, nor one whose plugin the catalog does not know or cannot offer, nor one the user's
 * `view` (`Access.view`; default: no grants) does not allow. Pass the result to `offer` as its
 * `extra` tools (which also drops names the catalog already offers).
 */
export const requestTools = <T extends RequestTool>(
  catalog: Catalog,
  loadedPlugins: LoadedPlugins.LoadedPlugins,
  tools: ReadonlyArray<T>,
  view: Access.View = Access.view(catalog)
): Array<OfferedTool> => {
  const out: Array<OfferedTool> = []
  for (const tool of tools) {
    if (isOfferable(catalog, loadedPlugins, tool, view)) out.push(tool.offered)
  }
  return out
}

const isOfferable = (
  catalog: Catalog,
  loaded: LoadedPlugins.LoadedPlugins,
  tool: RequestTool,
  view: Access.View
): boolean => {
  const entry = catalog.byName.get(tool.plugin)
  if (entry === undefined || !entry.discoverable) return false
  if (!Access.allowsTool(view, tool.plugin, tool.offered.name, tool.requires)) return false
  if (tool.visibility === "always") return true
  return tool.visibility === "on-demand" && LoadedPlugins.has(loaded, tool.plugin)
}

// The prefix is built once per catalog (`CatalogIndex.offer`), and once per restricted view
// for a user whose grants hide something (`ViewIndex.offer`).
const precomputed = (catalog: Catalog, view: Access.View): OfferPrefix =>
  view.open ? catalog.index.offer : CatalogIndex.ofView(catalog, view).offer

const onDemandOf = (p: OfferPrefix, entry: CatalogEntry, view: Access.View): ReadonlyArray<OfferedTool> => {
  let tools = p.onDemand.get(entry.name)
  if (tools === undefined) {
    tools = (
      view.open ? entry.onDemandTools : entry.onDemandTools.filter((t) => !view.hiddenTools.has(t.name))
    ).map(fromCatalogTool)
    p.onDemand.set(entry.name, tools)
  }
  return tools
}

/**
 * The tools one model call is given, in the stable order. Names in `loadedPlugins` that the
 * catalog does not know, or that are silent, are ignored; a name loaded twice counts once.
 * An `extra` tool whose name is already offered is dropped (the catalog tool wins): providers
 * reject duplicate tool names, and per-request tools must not shadow catalog tools.
 *
 * `view` is the user's (`Access.view` of their grants; default: no grants): a plugin they may not
 * use offers no tool, always-tier included, and a tool whose own `requires` they lack is left out.
 */
export const offer = (
  catalog: Catalog,
  loadedPlugins: LoadedPlugins.LoadedPlugins,
  extra: ReadonlyArray<OfferedTool> = [],
  view: Access.View = Access.view(catalog)
): ReadonlyArray<OfferedTool> => {
  const p = precomputed(catalog, view)
  const out = p.prefix.slice()
  const seen = loadedPlugins.length > 1 ? new Set<string>() : undefined
  for (const name of loadedPlugins) {
    if (seen !== undefined) {
      if (seen.has(name)) continue
      seen.add(name)
    }
    const entry = catalog.byName.get(name)
    if (entry === undefined || !entry.discoverable || !Access.allowsPlugin(view, entry)) continue
    for (const tool of onDemandOf(p, entry, view)) out.push(tool)
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

/**
 * The on-demand tools of `plugins` that `loadedPlugins` does not already offer, in the order
 * given (docs/spec/tiers.md#predictive-preload). Pass them last in `offer`'s `extra`: they then
 * follow every tool a turn without them is offered, so the cached prefix is unchanged. Unknown, silent
 * and loaded plugins add nothing, nor a plugin or tool the user's `view` does not allow (as
 * `offer`); an `always` plugin adds what loading it would (its on-demand tools).
 */
export const preloadTools = (
  catalog: Catalog,
  loadedPlugins: LoadedPlugins.LoadedPlugins,
  plugins: ReadonlyArray<string>,
  view: Access.View = Access.view(catalog)
): ReadonlyArray<OfferedTool> => {
  const added = plugins.filter((name) => !LoadedPlugins.has(loadedPlugins, name))
  if (added.length === 0) return []
  // What offering them as loaded would append: the same tool objects, in the same order, and
  // only what the user's view allows.
  const base = offer(catalog, loadedPlugins, [], view)
  return offer(catalog, LoadedPlugins.add(loadedPlugins, added), [], view).slice(base.length)
}

/** The message telling the model which plugin to load before calling `tool`. */
export const notLoadedMessage = (tool: string, plugin: string): string =>
  `Tool '${tool}' is not available yet: it belongs to plugin '${plugin}', which is not loaded in this ` +
  `conversation. Call ${MetaTools.LOAD_CAPABILITY} with {"names": ["${plugin}"]}, then call '${tool}' again.`

/** Longest tool name echoed in a message; a real one is at most 64 characters. */
const MAX_SHOWN = 100

const typeName = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "array" : typeof value

/** The offered tool called `name`, or the first request tool called so. */
const findRequestTool = (tools: ReadonlyArray<RequestTool>, name: string): RequestTool | undefined => {
  for (const tool of tools) if (tool.offered.name === name) return tool
  return undefined
}

const silentDecision = (plugin: string, tool: string): GateDecision =>
  GateDecision.Silent({
    plugin,
    tool,
    message: `Tool '${shown(tool, MAX_SHOWN)}' is internal to the runtime and cannot be called by the assistant.`
  })

/**
 * Decides a tool call against what was offered on that model call. Only an offered tool runs;
 * otherwise the model is told what to do: load the owning plugin, not use an internal tool, or
 * pick one of the closest names. Silent plugins are never named in suggestions.
 *
 * `requestTools` are the request's per-request tools and sub-agents (those that could run in
 * this request): a call to one that is not offered because its plugin is not loaded gets the
 * same "load plugin X" answer as a catalog tool. `toolName` is whatever the model sent: a value
 * that is not a string is refused as an unknown tool; this function never throws.
 *
 * `view` is the user's (`Access.view`): a tool of a plugin they may not use is refused with the
 * reason (`NotGranted`), and a tool hidden by its own `requires` is answered as unknown and never
 * suggested, so a user who was not granted an admin tool is not told it exists.
 */
export const gate = (
  catalog: Catalog,
  offered: ReadonlyArray<OfferedTool>,
  toolName: unknown,
  requestTools: ReadonlyArray<RequestTool> = [],
  view: Access.View = Access.view(catalog)
): GateDecision => {
  if (typeof toolName !== "string") {
    return GateDecision.Unknown({
      tool: "",
      suggestions: [],
      message:
        `A tool call needs a tool name (a string); this call's name was ${typeName(toolName)}. ` +
        `Call ${MetaTools.LIST_CAPABILITIES} to discover plugins, then ${MetaTools.LOAD_CAPABILITY} to make their tools available.`
    })
  }
  for (const tool of offered) if (tool.name === toolName) return offeredDecision({ tool })
  const owned = catalog.toolsByName.get(toolName)
  const perRequest = owned === undefined ? findRequestTool(requestTools, toolName) : undefined
  const ownerName = owned?.plugin ?? perRequest?.plugin
  if (!view.open && ownerName !== undefined) {
    const reason = view.denied.get(ownerName)
    const hidden =
      owned !== undefined
        ? view.hiddenTools.has(toolName)
        : !Access.allowsTool(view, ownerName, toolName, perRequest?.requires)
    if (reason !== undefined && catalog.byName.get(ownerName)?.discoverable === true) {
      return GateDecision.NotGranted({
        plugin: ownerName,
        tool: toolName,
        message: `Tool '${shown(toolName, MAX_SHOWN)}' belongs to plugin '${ownerName}', which this user may not use. ${reason} Tell the user; do not retry it in this conversation.`
      })
    }
    if (hidden) return unknownDecision(catalog, offered, requestTools, toolName, view)
  }
  if (owned !== undefined) {
    const entry = catalog.byName.get(owned.plugin)
    if (entry === undefined || !entry.discoverable || owned.visibility === "silent") {
      return silentDecision(owned.plugin, toolName)
    }
    return GateDecision.NotLoaded({
      plugin: owned.plugin,
      tool: toolName,
      message: notLoadedMessage(toolName, owned.plugin)
    })
  }
  if (perRequest !== undefined) {
    const entry = catalog.byName.get(perRequest.plugin)
    // A request tool of a plugin the catalog does not know cannot be loaded either: unknown.
    if (entry !== undefined) {
      if (!entry.discoverable || perRequest.visibility === "silent") {
        return silentDecision(perRequest.plugin, toolName)
      }
      return GateDecision.NotLoaded({
        plugin: perRequest.plugin,
        tool: toolName,
        message: notLoadedMessage(toolName, perRequest.plugin)
      })
    }
  }
  return unknownDecision(catalog, offered, requestTools, toolName, view)
}

const unknownDecision = (
  catalog: Catalog,
  offered: ReadonlyArray<OfferedTool>,
  requestTools: ReadonlyArray<RequestTool>,
  toolName: string,
  view: Access.View
): GateDecision => {
  // Longer than any tool name (the catalog caps them at 64): no suggestions, no scoring cost.
  const found =
    toolName.length > MAX_SCORED_LENGTH ? [] : suggest(catalog, offered, requestTools, toolName, view)
  const suggestions = view.open ? found : found.filter((n) => !view.hiddenTools.has(n))
  const hint =
    suggestions.length > 0 ? ` Closest tool names: ${suggestions.map((s) => `'${s}'`).join(", ")}.` : ""
  return GateDecision.Unknown({
    tool: toolName,
    suggestions,
    message:
      `There is no tool named '${shown(toolName, MAX_SHOWN)}'.${hint} ` +
      `Call ${MetaTools.LIST_CAPABILITIES} to discover plugins, then ${MetaTools.LOAD_CAPABILITY} to make their tools available.`
  })
}

/** Up to three names closest to `toolName` among everything the model could call, never silent. */
const suggest = (
  catalog: Catalog,
  offered: ReadonlyArray<OfferedTool>,
  requestTools: ReadonlyArray<RequestTool>,
  toolName: string,
  view: Access.View
): Array<string> => {
  const extra: Array<string> = offered.map((t) => t.name)
  for (const t of requestTools) {
    if (
      t.visibility !== "silent" &&
      catalog.byName.get(t.plugin)?.discoverable === true &&
      Access.allowsTool(view, t.plugin, t.offered.name, t.requires)
    )
      extra.push(t.offered.name)
  }
  return closestIn(catalog.index.toolNames, toolName, 3, extra)
}
