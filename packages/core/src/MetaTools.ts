/**
 * The two meta-tools the runtime registers itself (docs/spec/meta-tools.md): `list_capabilities` to discover
 * plugins and `load_capability` to bind their tools for the rest of the thread. Pure functions:
 * the adapter decodes the model's call into these, appends the ToolMessage and applies the
 * `loadedPlugins` update they return.
 */
import { Data, Either } from "effect"
import * as Access from "./Access.js"
import * as CapabilityIndex from "./CapabilityIndex.js"
import * as CatalogSource from "./CatalogSource.js"
import * as Connect from "./Connect.js"
import type { CatalogEntry } from "./internal/catalog/entry.js"
import type { Catalog } from "./internal/catalog/model.js"
import { type CALL_TOOL, LIST_CAPABILITIES, LOAD_CAPABILITY } from "./internal/metaTools.js"
import { closestIn, MAX_SCORED_LENGTH } from "./internal/nameIndex.js"
import type { RequestTool } from "./internal/offered.js"
import { shown as clip } from "./internal/text.js"
import * as LoadedPlugins from "./LoadedPlugins.js"
import {
  Category,
  MANIFEST_FIELDS,
  type PluginManifest,
  type Stability,
  type Visibility
} from "./PluginManifest.js"

export {
  CALL_TOOL,
  definitions,
  LIST_CAPABILITIES,
  LOAD_CAPABILITY,
  META_TOOL_NAMES
} from "./internal/metaTools.js"

/** A meta-tool call whose arguments cannot be used; `message` is what the model is told. */
export class MetaToolInputError extends Data.TaggedError("MetaToolInputError")<{
  readonly reason: "invalid-input"
  readonly tool: typeof LIST_CAPABILITIES | typeof LOAD_CAPABILITY | typeof CALL_TOOL
  readonly message: string
}> {}

/**
 * Listed when no `limit` was asked for. Every visible plugin is listed for an oracle of dozens
 * (docs/spec/meta-tools.md#list_capabilities): up to this many, every one is; beyond (a catalog of thousands), the list is cut and
 * says how to narrow it, rather than flood the conversation.
 */
export const DEFAULT_LIMIT = 100

/**
 * Most distinct names one `load_capability` call accepts. A turn needs a few plugins (three to
 * five loaded per thread is typical); a longer list is a model gone astray, and each unknown name costs a
 * "did you mean" search and a line in the ToolMessage. Beyond it the call is refused whole
 * (nothing is loaded) with a message saying so.
 */
export const MAX_NAMES_PER_LOAD = 32

/** The footnote an `experimental` plugin carries in `list_capabilities`. */
export const EXPERIMENTAL_WARNING =
  "Experimental: its tools may change or fail; tell the user when an answer relies on it."

// ---------------------------------------------------------------------------------------------
// Decoding

const isRecord = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/** Models sometimes send the arguments as a JSON string; anything else must be an object. */
const asObject = (input: unknown): Record<string, unknown> | undefined => {
  if (input === undefined || input === null) return {}
  if (typeof input === "string") {
    try {
      const parsed: unknown = JSON.parse(input)
      return isRecord(parsed) ? parsed : undefined
    } catch {
      return undefined
    }
  }
  return isRecord(input) ? input : undefined
}

/** The arguments of `list_capabilities`. */
export interface ListCapabilitiesInput {
  readonly query?: string | undefined
  readonly category?: Category | undefined
  readonly limit?: number | undefined
}

const describe = (u: unknown): string => (u === null ? "null" : Array.isArray(u) ? "an array" : typeof u)

/** Decodes `list_capabilities` arguments. Unknown keys are ignored; wrong types are errors. */
const decodeListInput = (input: unknown): Either.Either<ListCapabilitiesInput, MetaToolInputError> => {
  const fail = (message: string) =>
    Either.left(new MetaToolInputError({ reason: "invalid-input", tool: LIST_CAPABILITIES, message }))
  const o = asObject(input)
  if (o === undefined)
    return fail(`${LIST_CAPABILITIES} expects an object of arguments, got ${describe(input)}.`)
  const { query, category, limit } = o
  if (query !== undefined && query !== null && typeof query !== "string") {
    return fail(`${LIST_CAPABILITIES}: 'query' must be a string, got ${describe(query)}.`)
  }
  if (category !== undefined && category !== null && !Category.literals.includes(category as never)) {
    return fail(
      `${LIST_CAPABILITIES}: 'category' must be one of ${Category.literals.join(", ")}; got ${JSON.stringify(category)}.`
    )
  }
  if (
    limit !== undefined &&
    limit !== null &&
    !(typeof limit === "number" && Number.isInteger(limit) && limit >= 1)
  ) {
    return fail(
      `${LIST_CAPABILITIES}: 'limit' must be a whole number of at least 1, got ${JSON.stringify(limit)}.`
    )
  }
  const q = typeof query === "string" && query.trim().length > 0 ? query.trim() : undefined
  return Either.right({
    query: q,
    category: (category ?? undefined) as Category | undefined,
    limit: (limit ?? undefined) as number | undefined
  })
}

/**
 * Decodes `load_capability` arguments: `{ names: string[] }` or `{ name: string }` (both may be
 * given: `name` comes first). Names are trimmed and deduplicated; at least one is required.
 */
const decodeLoadInput = (input: unknown): Either.Either<ReadonlyArray<string>, MetaToolInputError> => {
  const fail = (message: string) =>
    Either.left(new MetaToolInputError({ reason: "invalid-input", tool: LOAD_CAPABILITY, message }))
  const usage = `Call it as {"names": ["plugin-name"]}.`
  const o = asObject(input)
  if (o === undefined)
    return fail(`${LOAD_CAPABILITY} expects an object of arguments, got ${describe(input)}. ${usage}`)
  const out: Array<string> = []
  if (o.name !== undefined && o.name !== null) {
    if (typeof o.name !== "string") return fail(`${LOAD_CAPABILITY}: 'name' must be a string. ${usage}`)
    out.push(o.name)
  }
  if (o.names !== undefined && o.names !== null) {
    // A lone string where a list is expected is a common slip; accept it as a list of one.
    const names = typeof o.names === "string" ? [o.names] : o.names
    if (!Array.isArray(names) || names.some((n) => typeof n !== "string")) {
      return fail(`${LOAD_CAPABILITY}: 'names' must be a list of plugin names (strings). ${usage}`)
    }
    // One by one: spreading a runaway list (hundreds of thousands of names) overflows the stack.
    for (const n of names) out.push(n)
  }
  const trimmed = LoadedPlugins.union(
    [],
    out.map((n) => n.trim()).filter((n) => n.length > 0)
  )
  if (trimmed.length === 0) return fail(`${LOAD_CAPABILITY}: give at least one plugin name. ${usage}`)
  if (trimmed.length > MAX_NAMES_PER_LOAD) {
    return fail(
      `${LOAD_CAPABILITY}: at most ${MAX_NAMES_PER_LOAD} plugin names per call, got ${trimmed.length}; nothing was loaded. ` +
        `Load only the plugins this request needs (${LIST_CAPABILITIES} with a query finds them).`
    )
  }
  return Either.right(trimmed)
}

// ---------------------------------------------------------------------------------------------
// list_capabilities

/** One plugin as `list_capabilities` shows it. */
export interface CapabilityListing {
  readonly name: string
  readonly title: string
  readonly summary: string
  readonly visibility: Exclude<Visibility, "silent">
  /**
   * True when every tool of the plugin is offered in this thread: an on-demand plugin once
   * loaded; an always plugin at once, unless it also has on-demand tools not yet loaded.
   */
  readonly loaded: boolean
  readonly category?: Category | undefined
  readonly tags: ReadonlyArray<string>
  readonly stability?: Stability | undefined
  /** The experimental footnote (`EXPERIMENTAL_WARNING`). */
  readonly warning?: string | undefined
  /** Relevance to the query, when one was given (higher is better). */
  readonly score?: number | undefined
  /**
   * Set when the plugin cannot be loaded now: why (an MCP server unreachable at boot, or a
   * capability it `requires` that the user's credentials do not grant).
   */
  readonly unavailable?: string | undefined
  /**
   * Set when the user must connect an account before the plugin can be used (`Connect`): why,
   * and the link that starts the connection. Such a plugin is never `loaded`.
   */
  readonly needsConnect?: Connect.NeedsConnect | undefined
}

/** The result of `list_capabilities`. */
export interface ListCapabilitiesResult {
  readonly tool: typeof LIST_CAPABILITIES
  readonly query?: string | undefined
  readonly category?: Category | undefined
  /** How many plugins matched before `limit` cut the list. */
  readonly total: number
  readonly plugins: ReadonlyArray<CapabilityListing>
}

/** Whether every tool of a plugin is offered, given this thread's loads. */
const isAvailable = (entry: CatalogEntry, loaded: LoadedPlugins.LoadedPlugins): boolean =>
  entry.visibility === "always"
    ? entry.onDemandTools.length === 0 || LoadedPlugins.has(loaded, entry.name)
    : LoadedPlugins.has(loaded, entry.name)

const listing = (
  entry: CatalogEntry,
  loaded: LoadedPlugins.LoadedPlugins,
  view: Access.View,
  pending: Connect.Pending,
  score?: number
): CapabilityListing => {
  const m = entry.manifest
  const denied = view.open ? undefined : view.denied.get(entry.name)
  // Not granted, or unavailable to everyone, says more than "connect": those come first, unless
  // the plugin waits for a list only a connected user reads (`Connect.NeedsConnect.unlisted`).
  const needsConnect =
    denied === undefined ? Connect.connectFor(pending, entry.name, entry.unavailable) : undefined
  const unavailable = needsConnect === undefined ? (entry.unavailable ?? denied) : undefined
  return {
    name: entry.name,
    title: m.title,
    summary: m.summary,
    visibility: entry.visibility === "always" ? "always" : "on-demand",
    loaded: denied === undefined && needsConnect === undefined && isAvailable(entry, loaded),
    category: m.category,
    tags: m.tags ?? [],
    stability: m.stability,
    warning: m.stability === "experimental" ? EXPERIMENTAL_WARNING : undefined,
    score: score === undefined ? undefined : Math.round(score * 1000) / 1000,
    unavailable,
    ...(needsConnect === undefined ? {} : { needsConnect })
  }
}

/**
 * `list_capabilities`: every discoverable plugin (never a silent one), by name; with a `query`,
 * only plugins sharing words with it, most relevant first (`CapabilityIndex`); `category`
 * filters. At most `limit` plugins (default `DEFAULT_LIMIT`, so a catalog of thousands does not
 * flood the conversation); `total` says how many matched. A plugin the user's `view` denies
 * (`Access`; default: no grants) is listed as `unavailable`, with the capabilities it requires.
 * `ranked`, when given, is the query's ranking computed beforehand (`SemanticIndex.rank`, whose
 * embedder runs outside this pure function), used instead of the lexical one. `pending` are the
 * plugins the user must connect an account for first (`Connect`): each is listed with
 * `needsConnect` and never as loaded.
 */
export const listCapabilities = (
  catalog: Catalog,
  loaded: LoadedPlugins.LoadedPlugins,
  input: unknown,
  view: Access.View = Access.view(catalog),
  ranked?: ReadonlyArray<{ readonly name: string; readonly score: number }>,
  pending: Connect.Pending = Connect.NONE
): Either.Either<ListCapabilitiesResult, MetaToolInputError> =>
  Either.map(decodeListInput(input), ({ query, category, limit }) => {
    const keep = (e: CatalogEntry | undefined): e is CatalogEntry =>
      e?.discoverable === true && (category === undefined || e.manifest.category === category)
    let matched: Array<{ entry: CatalogEntry; score?: number }>
    if (query === undefined) {
      matched = catalog.index.discoverableByName.filter(keep).map((entry) => ({ entry }))
    } else {
      matched = []
      for (const r of ranked ?? CapabilityIndex.rank(CapabilityIndex.forCatalog(catalog), query)) {
        const entry = catalog.byName.get(r.name)
        if (keep(entry)) matched.push({ entry, score: r.score })
      }
    }
    const shown = matched.slice(0, limit ?? DEFAULT_LIMIT)
    return {
      tool: LIST_CAPABILITIES,
      query,
      category,
      total: matched.length,
      plugins: shown.map(({ entry, score }) => listing(entry, loaded, view, pending, score))
    }
  })

// ---------------------------------------------------------------------------------------------
// load_capability

/** A tool a load made available, as the model will see it. */
export interface LoadedTool {
  readonly name: string
  /** Prefixed: `[<manifest.title>] <description>`. */
  readonly description: string
}

/** What `load_capability` did with one name. */
export type LoadOutcome =
  | {
      readonly name: string
      readonly status: "loaded"
      readonly manifest: PluginManifest
      /** Every tool of the plugin the model is now offered (always-tier and on-demand). */
      readonly tools: ReadonlyArray<LoadedTool>
      /** The plugin's `operatingGuide` (a skill's instructions), when it has one. */
      readonly operatingGuide?: string | undefined
    }
  | {
      readonly name: string
      readonly status: "alreadyAvailable"
      readonly alreadyAvailable: true
      /** `always`: bound since boot; `loaded`: loaded earlier in this thread. */
      readonly reason: "always" | "loaded"
    }
  | {
      /** The requested name; an unknown one is clipped to 200 characters and escaped. */
      readonly name: string
      readonly status: "error"
      /**
       * `unavailable`: the plugin exists but cannot be used now (`CatalogEntry.unavailable`);
       * `not-granted`: it requires capabilities the user's credentials do not grant (`Access`);
       * `needs-connect`: the user must connect an account first (`Connect`; `connectUrl` starts it).
       */
      readonly error: "unknown" | "silent" | "unavailable" | "not-granted" | "needs-connect"
      readonly message: string
      /** For `needs-connect`: the link that starts the connection. */
      readonly connectUrl?: string | undefined
      /** For `unknown`: up to three discoverable plugin names, closest first. */
      readonly suggestions: ReadonlyArray<string>
    }

/** The result of `load_capability`. */
export interface LoadCapabilityResult {
  readonly tool: typeof LOAD_CAPABILITY
  /** One outcome per distinct requested name, in request order. */
  readonly results: ReadonlyArray<LoadOutcome>
  /** The thread's `loadedPlugins` after the call (a union: nothing is ever removed). */
  readonly loadedPlugins: LoadedPlugins.LoadedPlugins
  /** The names this call added, in order: the state update the adapter emits. */
  readonly newlyLoaded: ReadonlyArray<string>
  /** Set when nothing new was loaded and no name failed: the call was a no-op. */
  readonly alreadyAvailable?: true | undefined
}

/** The manifest with its fields in the order of docs/spec/manifest.md#fields, absent ones left out. */
/** The manifest without the examples of tools hidden from the user (`Access.shownExamples`). */
const shownManifest = (m: PluginManifest, view: Access.View): PluginManifest => {
  if (m.examples === undefined) return m
  const examples = Access.shownExamples(view, m.examples)
  return examples === m.examples ? m : { ...m, examples }
}

const canonicalManifest = (m: PluginManifest): PluginManifest => {
  // title and summary first, always (required), then every other field the manifest sets.
  const out: Record<string, unknown> = { title: m.title, summary: m.summary }
  for (const key of MANIFEST_FIELDS) {
    if (out[key] === undefined && m[key] !== undefined) out[key] = m[key]
  }
  return out as unknown as PluginManifest
}

/** Up to `n` discoverable plugin names closest to `name`; none for a name too long to mean one. */
const closestPlugins = (catalog: Catalog, name: string, n: number): Array<string> =>
  name.length > MAX_SCORED_LENGTH ? [] : closestIn(catalog.index.pluginNames, name, n)

const unknownOutcome = (catalog: Catalog, name: string): LoadOutcome => {
  const tool = catalog.toolsByName.get(name)
  const owner = tool === undefined ? undefined : catalog.byName.get(tool.plugin)
  if (owner?.discoverable && tool!.visibility !== "silent") {
    // The model passed a tool name: point at the plugin that owns it.
    const rest = closestPlugins(catalog, name, 3)
      .filter((n) => n !== owner.name)
      .slice(0, 2)
    return {
      name,
      status: "error",
      error: "unknown",
      message: `'${name}' is a tool, not a plugin: it belongs to plugin '${owner.name}'. Call ${LOAD_CAPABILITY} with {"names": ["${owner.name}"]}.`,
      suggestions: [owner.name, ...rest]
    }
  }
  const suggestions = closestPlugins(catalog, name, 3)
  const hint = suggestions.length > 0 ? ` Closest names: ${suggestions.map((s) => `'${s}'`).join(", ")}.` : ""
  // A name is echoed clipped: a model's runaway string must not come back whole in the ToolMessage.
  const echoed = clip(name)
  return {
    name: echoed,
    status: "error",
    error: "unknown",
    message: `There is no plugin named '${echoed}'.${hint} Call ${LIST_CAPABILITIES} to see what can be loaded.`,
    suggestions
  }
}

/**
 * A loaded plugin's non-silent tools the user may be offered: catalog tools, then its request
 * tools of a new name.
 */
const toolsOf = (
  entry: CatalogEntry,
  requestTools: ReadonlyArray<RequestTool>,
  view: Access.View
): Array<LoadedTool> => {
  const out: Array<LoadedTool> = []
  const names = new Set<string>()
  for (const t of entry.tools) {
    if (t.visibility === "silent" || view.hiddenTools.has(t.name)) continue
    names.add(t.name)
    out.push({ name: t.name, description: t.description })
  }
  for (const t of requestTools) {
    if (t.plugin !== entry.name || t.visibility === "silent" || names.has(t.offered.name)) continue
    if (!Access.allowsTool(view, t.plugin, t.offered.name, t.requires)) continue
    names.add(t.offered.name)
    out.push({ name: t.offered.name, description: t.offered.description })
  }
  return out
}

/**
 * `load_capability`. At most `MAX_NAMES_PER_LOAD` distinct names (more is an input error). Per
 * name: unknown → error with up to three closest plugin names (a tool name is pointed at its
 * plugin; a name over 128 characters gets none), found through an index built once per catalog,
 * so the work per name does not grow with the catalog; silent → error; already loaded in this thread → `alreadyAvailable`;
 * an `always` plugin → `alreadyAvailable`, except that an always plugin which also has
 * on-demand tools (a per-tool override) is loaded like any other, since that is the only way
 * to bind those tools; otherwise the name joins `loadedPlugins` and the outcome carries the
 * full manifest and the tools now offered.
 *
 * `requestTools` are the request's per-request tools and sub-agents (`Offer.RequestTool`): a
 * loaded plugin's outcome lists its non-silent ones too, and an `always` plugin with an
 * on-demand request tool is loaded, since that is what binds the tool.
 *
 * `view` is the user's (`Access.view` of their grants; default: no grants): a plugin it denies is
 * refused (`not-granted`, naming the capabilities it requires) and nothing is loaded for it, and a
 * loaded plugin's tools hidden by their own `requires` are not listed.
 *
 * A plugin in `pending` (`Connect`: the user must connect an account first) is refused with
 * `needs-connect`, its reason and the link that starts the connection; nothing is loaded for it.
 */
export const loadCapability = (
  catalog: Catalog,
  loaded: LoadedPlugins.LoadedPlugins,
  input: unknown,
  requestTools: ReadonlyArray<RequestTool> = [],
  view: Access.View = Access.view(catalog),
  pending: Connect.Pending = Connect.NONE
): Either.Either<LoadCapabilityResult, MetaToolInputError> =>
  Either.map(decodeLoadInput(input), (names) => {
    const results: Array<LoadOutcome> = []
    const newlyLoaded: Array<string> = []
    for (const name of names) {
      const entry = catalog.byName.get(name)
      if (entry === undefined) {
        results.push(unknownOutcome(catalog, name))
      } else if (!entry.discoverable) {
        results.push({
          name,
          status: "error",
          error: "silent",
          message: `Plugin '${name}' is internal to the runtime (silent) and cannot be loaded.`,
          suggestions: []
        })
      } else if (
        entry.unavailable !== undefined &&
        Connect.connectFor(pending, name, entry.unavailable) === undefined
      ) {
        results.push({
          name,
          status: "error",
          error: "unavailable",
          message: CatalogSource.unavailableMessage(name, entry.unavailable),
          suggestions: []
        })
      } else if (!view.open && view.denied.has(name)) {
        results.push({
          name,
          status: "error",
          error: "not-granted",
          message: `Plugin '${name}' cannot be loaded for this user. ${view.denied.get(name)} Tell the user; an operator can grant it. Do not retry it in this conversation.`,
          suggestions: []
        })
      } else if (pending.has(name)) {
        const needs = pending.get(name)!
        results.push({
          name,
          status: "error",
          error: "needs-connect",
          message: Connect.loadMessage(name, needs),
          connectUrl: needs.url,
          suggestions: []
        })
      } else if (LoadedPlugins.has(loaded, name)) {
        results.push({ name, status: "alreadyAvailable", alreadyAvailable: true, reason: "loaded" })
      } else if (
        entry.visibility === "always" &&
        entry.onDemandTools.length === 0 &&
        !requestTools.some((t) => t.plugin === name && t.visibility === "on-demand")
      ) {
        results.push({ name, status: "alreadyAvailable", alreadyAvailable: true, reason: "always" })
      } else {
        newlyLoaded.push(name)
        results.push({
          name,
          status: "loaded",
          manifest: canonicalManifest(shownManifest(entry.manifest, view)),
          tools: toolsOf(entry, requestTools, view),
          // An always plugin's guide is in the system prompt already (`SystemPrompt`).
          ...(entry.operatingGuide === undefined || entry.visibility === "always"
            ? {}
            : { operatingGuide: entry.operatingGuide })
        })
      }
    }
    const failed = results.some((r) => r.status === "error")
    return {
      tool: LOAD_CAPABILITY,
      results,
      loadedPlugins: LoadedPlugins.union(loaded, newlyLoaded),
      newlyLoaded,
      alreadyAvailable: newlyLoaded.length === 0 && !failed ? true : undefined
    }
  })

// ---------------------------------------------------------------------------------------------
// ToolMessage text

/**
 * The content of the ToolMessage answering a meta-tool call: compact JSON with a fixed key
 * order, so the same call on the same state always yields the same text (prompt caches stay
 * warm). `loadedPlugins` is left out: it is state, not something the model needs to read.
 */
export const formatToolMessage = (
  result: ListCapabilitiesResult | LoadCapabilityResult | MetaToolInputError
): string => {
  if (result instanceof MetaToolInputError) return JSON.stringify({ error: result.message })
  if (result.tool === LIST_CAPABILITIES) {
    const shown = result.plugins.length
    return JSON.stringify({
      // Echoed clipped: a runaway query must not come back whole in the conversation.
      ...(result.query === undefined ? {} : { query: clip(result.query) }),
      ...(result.category === undefined ? {} : { category: result.category }),
      total: result.total,
      ...(shown < result.total
        ? { note: `Showing ${shown} of ${result.total}; pass a query, a category or a larger limit.` }
        : {}),
      plugins: result.plugins,
      ...(shown === 0
        ? { note: "No plugin matched. Try other words, or call without a query to list everything." }
        : {})
    })
  }
  return JSON.stringify({
    ...(result.alreadyAvailable === true ? { alreadyAvailable: true } : {}),
    newlyLoaded: result.newlyLoaded,
    results: result.results
  })
}
