/**
 * The catalog's boot (docs/spec/catalog.md): every manifest validated, names unique, one flat
 * tool namespace, `dependsOn` sorted topologically, then the `CatalogIndex` made with it.
 *
 * `make` never stops at the first problem: a boot that fails prints every reason at once, so a
 * fork with many plugins is fixed in one pass instead of one error per restart.
 */
import { Data, Either } from "effect"
import * as CatalogIndex from "../../CatalogIndex.js"
import { describe } from "../../Describe.js"
import * as ManifestOverrides from "../../ManifestOverrides.js"
import { exampleToolNames, validateManifest } from "../../ManifestValidation.js"
import { isPluginName, type Plugin } from "../../Plugin.js"
import { DEFAULT_VISIBILITY, type PluginManifest, type Visibility } from "../../PluginManifest.js"
import { heuristic, type TokenCounterService } from "../../TokenCounter.js"
import { type Capability, readRequires } from "../capability.js"
import { sortByDependencies } from "../dependencyOrder.js"
import { checkExampleArgs } from "../exampleArgs.js"
import type { PluginSource } from "../pluginSource.js"
import { shown } from "../text.js"
import * as Tools from "../tools.js"
import type { CatalogEntry, CatalogSubAgent, CatalogTool, OwnedMiddleware } from "./entry.js"
import { DEFAULT_LOAD_BUDGET_TOKENS, loadCost, overBudgetReason } from "./loadCost.js"
import { type Catalog, RESERVED_TOOL_NAMES } from "./model.js"

/** Options of `make`. */
export interface MakeOptions {
  /**
   * More names no plugin may register (a host's own tools). They add to `RESERVED_TOOL_NAMES`,
   * which stay reserved whatever is given here: a plugin never takes a meta-tool's name.
   */
  readonly reservedToolNames?: ReadonlyArray<string>
  /**
   * The operator's manifest overrides (docs/plugins.md#manifest-overrides): plugin name → manifest fields,
   * merged over the plugin's own (`ManifestOverrides.apply`) before the manifest is validated. A
   * malformed field, or a name no plugin has, is a boot error.
   */
  readonly manifestOverrides?: Readonly<Record<string, unknown>> | undefined
  /**
   * The load budget (docs/spec/token-budget.md#the-load-budget): a plugin whose load would add
   * more tokens than this to every later model call is made unavailable, with a boot warning,
   * and `load_capability` refuses it saying why. Default `DEFAULT_LOAD_BUDGET_TOKENS` (50,000);
   * `Infinity` turns the check off.
   */
  readonly loadBudgetTokens?: number | undefined
  /** What prices a load for the budget; core's heuristic when absent. */
  readonly tokenCounter?: TokenCounterService | undefined
}

/**
 * `entry`, or, when loading it would cost more than `budget`, the same entry made unavailable
 * (listed so, never loaded) with a warning telling the operator how to narrow it.
 */
const withinLoadBudget = (
  entry: CatalogEntry,
  budget: number,
  counter: TokenCounterService,
  warnings: string[]
): CatalogEntry => {
  if (entry.unavailable !== undefined || !Number.isFinite(budget)) return entry
  const cost = loadCost(entry, counter)
  if (cost === undefined || cost.cost <= budget) return entry
  const reason = overBudgetReason(cost, budget)
  const narrow =
    entry.source?.kind === "mcp"
      ? `narrow it with tools.allow in its MCP config, or raise LOAD_BUDGET_TOKENS`
      : `split it, or raise LOAD_BUDGET_TOKENS`
  warnings.push(`Plugin '${entry.name}' cannot be loaded: ${reason} To use it, ${narrow}.`)
  return { ...entry, unavailable: reason }
}

/** Boot failed: every hard error found, with the warnings gathered on the way. */
export class CatalogBootError extends Data.TaggedError("CatalogBootError")<{
  readonly reason: "invalid-catalog"
  /** Each hard violation, without the `[boot-error]` prefix. */
  readonly errors: ReadonlyArray<string>
  /** Each soft violation, without the `[boot-warning]` prefix. */
  readonly warnings: ReadonlyArray<string>
}> {
  /** What a host prints: one `[boot-error] <message>` line per error. */
  get lines(): ReadonlyArray<string> {
    return this.errors.map((e) => `[boot-error] ${e}`)
  }
  /** One `[boot-warning] <message>` line per warning. */
  get warningLines(): ReadonlyArray<string> {
    return this.warnings.map((w) => `[boot-warning] ${w}`)
  }
  override get message(): string {
    return [`Catalog boot failed with ${this.errors.length} error(s):`, ...this.lines].join("\n")
  }
}

/** What the first pass learns about one registered plugin. */
interface Draft {
  readonly name: string
  readonly plugin: Plugin
  readonly index: number
  readonly dependsOn: ReadonlyArray<string>
  readonly entry: CatalogEntry
}

/** Resolves one plugin: manifest rules, tool checks, effective visibilities, JSON Schemas. */
const resolvePlugin = (
  plugin: Plugin,
  name: string,
  index: number,
  errors: string[],
  warnings: string[],
  override?: unknown
): CatalogEntry => {
  Tools.checkKnownKeys(plugin, Tools.PLUGIN_KEYS, `Plugin '${shown(name)}'`, "'manifest'", errors)
  const tools = Tools.collectTools(plugin, name, errors)
  let manifest: PluginManifest
  try {
    manifest = plugin.manifest
  } catch (thrown) {
    errors.push(`Plugin '${shown(name)}' manifest could not be read (${describe(thrown)}).`)
    manifest = undefined as never
  }
  // A derived plugin's own overrides were applied when it was derived; the config's go last.
  const sourceChanges = readSourceChanges(plugin)
  let changes: ReadonlyArray<ManifestOverrides.ManifestChange> = sourceChanges
  if (override !== undefined && manifest !== null && typeof manifest === "object") {
    const applied = ManifestOverrides.apply(manifest, override, `manifestOverrides.${shown(name)}`)
    errors.push(...applied.errors)
    warnings.push(...applied.warnings)
    manifest = applied.manifest
    changes = [...sourceChanges, ...applied.changes]
  }
  const specs = Tools.collectSubAgents(plugin, name, errors)
  const toolNames: string[] = []
  for (const t of [...tools, ...specs]) {
    if (t !== null && typeof t === "object" && typeof t.name === "string") toolNames.push(t.name)
  }
  // A plugin whose every tool comes per request (`getRequestTools`: an MCP server's, say) has
  // nothing to check its examples against at boot, so an unknown example tool only warns there.
  // One that registers tools at boot gets the hard check (docs/spec/manifest.md#hard-errors), as QiForge does: a stale example
  // is caught at boot, not by a model calling a tool that does not exist.
  // Read directly: a throwing getter is reported by `make` as "could not be read".
  const requestHook: unknown = plugin.getRequestTools
  const requestSubAgentHook: unknown = plugin.getRequestSubAgents
  const perRequest = typeof requestHook === "function" || typeof requestSubAgentHook === "function"
  const examplesAtRequest = perRequest && toolNames.length === 0
  const result = validateManifest(manifest, name, examplesAtRequest ? undefined : toolNames)
  if (result.errors.length > 0) errors.push(...result.errors)
  if (result.warnings.length > 0) warnings.push(...result.warnings)
  if (examplesAtRequest) {
    for (const example of exampleToolNames(manifest)) {
      if (!toolNames.includes(example)) {
        warnings.push(
          `Plugin '${shown(name)}' manifest example references tool '${example}', which is not registered at boot (assumed to come from ${typeof requestHook === "function" ? "getRequestTools" : "getRequestSubAgents"}).`
        )
      }
    }
  }

  // validateManifest already reported unreadable or malformed fields; fall back quietly here.
  const declared = Tools.readQuietly(manifest, "visibility")
  const visibility: Visibility = Tools.isVisibility(declared) ? declared : DEFAULT_VISIBILITY
  const title = Tools.readQuietly(manifest, "title")
  const prefix = typeof title === "string" ? title : name

  const resolved: CatalogTool[] = []
  const onDemandTools: CatalogTool[] = []
  const alwaysTools: CatalogTool[] = []
  const ctx: Tools.ToolContext = {
    kind: "tool",
    name,
    visibility,
    prefix,
    errors,
    warnings,
    seen: new Set<string>(),
    resolved,
    onDemandTools,
    alwaysTools
  }
  tools.forEach((tool, i) => {
    try {
      Tools.resolveTool(tool, i, ctx)
    } catch (thrown) {
      errors.push(`Plugin '${shown(name)}' tool #${i} could not be read (${describe(thrown)}).`)
    }
  })
  const subAgents: CatalogSubAgent[] = []
  specs.forEach((spec, i) => {
    try {
      const resolvedSubAgent = Tools.checkSubAgent(spec, i, ctx)
      if (resolvedSubAgent !== undefined) subAgents.push(resolvedSubAgent)
    } catch (thrown) {
      errors.push(`Plugin '${shown(name)}' sub-agent #${i} could not be read (${describe(thrown)}).`)
    }
  })
  // A plugin has a few tools: a scan beats building a map for every plugin at boot.
  const toolNamed = (toolName: string): CatalogTool | undefined =>
    resolved.find((t) => t.name === toolName) ?? subAgents.find((s) => s.tool.name === toolName)?.tool
  checkExampleArgs(manifest, name, toolNamed, warnings)

  return {
    name,
    plugin,
    manifest,
    visibility,
    tools: resolved,
    onDemandTools,
    alwaysTools,
    discoverable: visibility !== "silent",
    index,
    middlewares: Tools.collectMiddlewares(plugin, name, errors),
    subAgents,
    hasRequestHooks: perRequest,
    hasSharedState: readSharedStateHook(plugin, name, errors),
    ...readOptionalText(plugin, name, "operatingGuide", errors),
    ...readOptionalText(plugin, name, "unavailable", errors),
    ...readSource(plugin, name, errors),
    ...readPluginRequires(plugin, name, errors),
    ...(changes.length === 0 ? {} : { overrides: changes })
  }
}

const readSourceChanges = (plugin: Plugin): ReadonlyArray<ManifestOverrides.ManifestChange> => {
  const changes = Tools.readQuietly(Tools.readQuietly(plugin, "source"), "overrides")
  return Array.isArray(changes) ? (changes as ReadonlyArray<ManifestOverrides.ManifestChange>) : []
}

const readPluginRequires = (
  plugin: Plugin,
  name: string,
  errors: string[]
): { readonly requires?: ReadonlyArray<Capability> } => {
  const requires = readRequires(
    Tools.readQuietly(plugin, "requires"),
    `Plugin '${shown(name)}' field 'requires'`,
    errors
  )
  return requires.length === 0 ? {} : { requires }
}

/** `operatingGuide` or `unavailable`: a string when set; empty text counts as unset. */
const readOptionalText = <K extends "operatingGuide" | "unavailable">(
  plugin: Plugin,
  name: string,
  key: K,
  errors: string[]
): { readonly [P in K]?: string } => {
  const value = Tools.readQuietly(plugin, key)
  if (value === undefined) return {}
  if (typeof value !== "string") {
    errors.push(`Plugin '${shown(name)}' field '${key}' must be a string.`)
    return {}
  }
  const text = value.trim()
  return text.length === 0 ? {} : ({ [key]: text } as { readonly [P in K]?: string })
}

const readSource = (plugin: Plugin, name: string, errors: string[]): { readonly source?: PluginSource } => {
  const source = Tools.readQuietly(plugin, "source") as PluginSource | undefined
  if (source === undefined) return {}
  const kind = Tools.readQuietly(source, "kind")
  if (kind !== "mcp" && kind !== "skill") {
    errors.push(
      `Plugin '${shown(name)}' field 'source' must be {kind: 'mcp', server} or {kind: 'skill', path}.`
    )
    return {}
  }
  return { source }
}

/** Whether the plugin has `getSharedState`; anything but a function there is a boot error. */
const readSharedStateHook = (plugin: Plugin, name: string, errors: string[]): boolean => {
  const hook: unknown = plugin.getSharedState
  if (hook === undefined) return false
  if (typeof hook === "function") return true
  errors.push(`Plugin '${shown(name)}' getSharedState must be a function.`)
  return false
}

const readDependsOn = (plugin: Plugin, name: string, errors: string[]): ReadonlyArray<string> => {
  let deps: unknown
  try {
    deps = plugin.dependsOn
  } catch (thrown) {
    errors.push(`Plugin '${shown(name)}' field 'dependsOn' could not be read (${describe(thrown)}).`)
    return []
  }
  if (deps === undefined) return []
  if (!Array.isArray(deps) || deps.some((d) => typeof d !== "string")) {
    errors.push(`Plugin '${shown(name)}' field 'dependsOn' must be an array of plugin names.`)
    return []
  }
  return [...new Set(deps as ReadonlyArray<string>)]
}

/**
 * Builds the catalog. Returns every hard error at once as a `CatalogBootError`; a plugin's
 * `getTools()` that throws is one of those errors, not a crash.
 */
export const make = (
  plugins: ReadonlyArray<Plugin>,
  options: MakeOptions = {}
): Either.Either<Catalog, CatalogBootError> => {
  const errors: string[] = []
  const warnings: string[] = []
  // Options only add names: the meta-tools' names are reserved whatever the host passes.
  const reserved = new Set([...RESERVED_TOOL_NAMES, ...(options.reservedToolNames ?? [])])
  const drafts: Draft[] = []
  const byName = new Map<string, Draft>()
  const overrides = options.manifestOverrides
  const overrideShape = ManifestOverrides.checkShape(overrides)
  errors.push(...overrideShape)
  const overrideOf = (name: string): unknown =>
    overrideShape.length === 0 && overrides !== undefined && Object.hasOwn(overrides, name)
      ? overrides[name]
      : undefined

  if (!Array.isArray(plugins)) {
    return Either.left(
      new CatalogBootError({
        reason: "invalid-catalog",
        errors: ["The plugin list must be an array."],
        warnings
      })
    )
  }

  // A plain loop, not forEach: a hole in the list is a bad input to report, not to skip.
  for (let index = 0; index < plugins.length; index++) {
    const plugin: Plugin | null | undefined = plugins[index]
    if (plugin === null || typeof plugin !== "object") {
      errors.push(`Plugin #${index} must be an object (got ${plugin === null ? "null" : typeof plugin}).`)
      continue
    }
    let name: unknown
    try {
      name = plugin.name
    } catch (thrown) {
      errors.push(`Plugin #${index} name could not be read (${describe(thrown)}).`)
      continue
    }
    if (typeof name !== "string") {
      errors.push(`Plugin #${index} has no name (expected a kebab-case string, got ${typeof name}).`)
      continue
    }
    if (!isPluginName(name)) {
      errors.push(
        `Plugin '${shown(name)}' has an invalid name: plugin names are kebab-case (lowercase letters, digits and single dashes, starting with a letter).`
      )
    }
    const previous = byName.get(name)
    if (previous !== undefined) {
      // Only the first registration is resolved: its twin's tools would all "collide" too.
      errors.push(`Plugin '${shown(name)}' is registered more than once (#${previous.index} and #${index}).`)
      continue
    }
    let entry: CatalogEntry
    try {
      entry = resolvePlugin(plugin, name, index, errors, warnings, overrideOf(name))
    } catch (thrown) {
      // Reads the per-field guards do not cover (a hostile manifest or hook getter).
      errors.push(`Plugin '${shown(name)}' could not be read (${describe(thrown)}).`)
      continue
    }
    const draft: Draft = { name, plugin, index, dependsOn: readDependsOn(plugin, name, errors), entry }
    drafts.push(draft)
    byName.set(name, draft)
  }

  // Which of the two kinds of reserved name was taken, worded like `checkRequestTool` words it.
  const reservedBy = (name: string) =>
    RESERVED_TOOL_NAMES.includes(name)
      ? "a name reserved for the runtime's meta-tools"
      : "a name the host reserves"
  const toolsByName = new Map<string, CatalogTool>()
  for (const { entry } of drafts) {
    for (const tool of entry.tools) {
      if (reserved.has(tool.name)) {
        errors.push(`Plugin '${shown(entry.name)}' registers tool '${tool.name}', ${reservedBy(tool.name)}.`)
        continue
      }
      const owner = toolsByName.get(tool.name)
      if (owner !== undefined) {
        errors.push(
          `Plugin '${shown(entry.name)}' registers tool '${tool.name}', which plugin '${shown(owner.plugin)}' already registers (tool names are one flat namespace).`
        )
        continue
      }
      toolsByName.set(tool.name, tool)
    }
  }
  // Sub-agents are offered as tools: they share the one namespace (a plugin's own tools and
  // sub-agents were checked against each other when it was resolved).
  const subAgentOwners = new Map<string, string>()
  for (const { entry } of drafts) {
    for (const { tool } of entry.subAgents) {
      const owner = toolsByName.get(tool.name)?.plugin ?? subAgentOwners.get(tool.name)
      if (reserved.has(tool.name)) {
        errors.push(
          `Plugin '${shown(entry.name)}' registers sub-agent '${tool.name}', ${reservedBy(tool.name)}.`
        )
      } else if (owner !== undefined && owner !== entry.name) {
        errors.push(
          `Plugin '${shown(entry.name)}' registers sub-agent '${tool.name}', which plugin '${shown(owner)}' already registers (tool names are one flat namespace).`
        )
      } else subAgentOwners.set(tool.name, entry.name)
    }
  }

  if (overrides !== undefined && overrideShape.length === 0) {
    for (const name of Object.keys(overrides)) {
      if (!byName.has(name)) {
        const known = [...byName.keys()].sort()
        errors.push(
          `manifestOverrides.${shown(name)} names no plugin of the catalog (plugins: ${shown(known.join(", "))}).`
        )
      }
    }
  }

  const sorted = sortByDependencies(drafts, byName, errors)
  const budget = options.loadBudgetTokens ?? DEFAULT_LOAD_BUDGET_TOKENS
  if (!(budget > 0)) {
    errors.push(`loadBudgetTokens must be a positive number of tokens (or Infinity for none), got ${budget}.`)
  }

  if (errors.length > 0) {
    return Either.left(new CatalogBootError({ reason: "invalid-catalog", errors, warnings }))
  }

  const entries = sorted.map((d) =>
    withinLoadBudget(d.entry, budget, options.tokenCounter ?? heuristic, warnings)
  )
  // Few plugins have always-tools: sort only those (by name, code-unit order, locale-free).
  const alwaysTools = entries
    .filter((e) => e.alwaysTools.length > 0)
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .flatMap((e) => e.alwaysTools)
  const entriesByName = new Map<string, CatalogEntry>()
  for (const entry of entries) entriesByName.set(entry.name, entry)
  const middlewares: OwnedMiddleware[] = []
  for (const entry of entries) {
    for (const middleware of entry.middlewares) middlewares.push({ plugin: entry.name, middleware })
  }
  const subAgents = entries.flatMap((e) => e.subAgents)
  return Either.right({
    entries,
    byName: entriesByName,
    toolsByName,
    alwaysTools,
    warnings: warnings.map((w) => `[boot-warning] ${w}`),
    middlewares,
    subAgents,
    withRequestHooks: entries.filter((e) => e.hasRequestHooks),
    hostReservedToolNames: new Set(options.reservedToolNames ?? []),
    withSharedState: entries.filter((e) => e.hasSharedState),
    index: CatalogIndex.make({ entries, toolsByName, subAgents, alwaysTools })
  })
}

/** `make`, throwing the `CatalogBootError`: for tests and scripts. */
export const unsafeMake = (plugins: ReadonlyArray<Plugin>, options?: MakeOptions): Catalog =>
  Either.getOrThrowWith(make(plugins, options), (error) => error)
