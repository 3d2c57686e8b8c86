/**
 * The catalog built once at boot from the plugins: every manifest validated, names unique, one
 * flat tool namespace, `dependsOn` sorted topologically. Queries on it are pure functions.
 *
 * `make` never stops at the first problem: a boot that fails prints every reason at once, so a
 * fork with many plugins is fixed in one pass instead of one error per restart.
 */
import { Data, Effect, Either, type Schema } from "effect"
import { type Capability, readRequires } from "./Access.js"
import type { PluginSource } from "./CatalogSource.js"
import { sortByDependencies } from "./internal/dependencyOrder.js"
import { checkExampleArgs } from "./internal/exampleArgs.js"
import { describe, shown } from "./internal/text.js"
import * as Tools from "./internal/tools.js"
import * as ManifestOverrides from "./ManifestOverrides.js"
import { exampleToolNames, validateManifest } from "./ManifestValidation.js"
import {
  isPluginName,
  type JsonSchema,
  type Plugin,
  type PluginMiddleware,
  type PluginTool,
  type SubAgentSpec
} from "./Plugin.js"
import { DEFAULT_VISIBILITY, type PluginManifest, type Visibility } from "./PluginManifest.js"

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
  /** The tool's own `requires` (checked), absent when it declares none; the plugin's apply too. */
  readonly requires?: ReadonlyArray<Capability> | undefined
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
}

/** Tool names the runtime registers itself (docs/spec/catalog.md#tool-names); no plugin may take them. */
export const RESERVED_TOOL_NAMES: ReadonlyArray<string> = ["list_capabilities", "load_capability"]

/**
 * The JSON Schema a tool's arguments are offered with, derived the way the catalog derives it:
 * `jsonSchema` when the tool sets one, else the JSON Schema of its Effect Schema `input`
 * (without `$schema`; derived once per schema object). Left, with the reason, when the tool has
 * neither or when `input` has no JSON Schema form (give such a tool a `jsonSchema`).
 */
export const toolParameters: (
  tool: Pick<PluginTool, "input" | "jsonSchema">
) => Either.Either<JsonSchema, string> = Tools.toolParameters

/** The arguments of every sub-agent tool: the task the main agent delegates. */
export const SubAgentInput: Schema.Struct<{ task: typeof Schema.String }> = Tools.SubAgentInput

/**
 * A sub-agent as a plugin tool: `SubAgentInput` arguments, and a handler that passes the task to
 * `spec.run`. The catalog resolves sub-agents through it, so a sub-agent is named, described,
 * gated and offered exactly like a tool.
 */
export const subAgentTool: (
  spec: SubAgentSpec
) => PluginTool<{ readonly task: string }, { readonly task: string }> = Tools.subAgentTool

/** Options of `make`. */
export interface MakeOptions {
  /**
   * More names no plugin may register (a host's own tools). They add to `RESERVED_TOOL_NAMES`,
   * which stay reserved whatever is given here: a plugin never takes a meta-tool's name.
   */
  readonly reservedToolNames?: ReadonlyArray<string>
  /**
   * The operator's manifest overrides (README "Manifest overrides"): plugin name → manifest fields,
   * merged over the plugin's own (`ManifestOverrides.apply`) before the manifest is validated. A
   * malformed field, or a name no plugin has, is a boot error.
   */
  readonly manifestOverrides?: Readonly<Record<string, unknown>> | undefined
}

/** Boot failed: every hard error found, with the warnings gathered on the way. */
export class CatalogBootError extends Data.TaggedError("CatalogBootError")<{
  readonly reason: "InvalidCatalog"
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
        reason: "InvalidCatalog",
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

  if (errors.length > 0) {
    return Either.left(new CatalogBootError({ reason: "InvalidCatalog", errors, warnings }))
  }

  const entries = sorted.map((d) => d.entry)
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
  return Either.right({
    entries,
    byName: entriesByName,
    toolsByName,
    alwaysTools,
    warnings: warnings.map((w) => `[boot-warning] ${w}`),
    middlewares,
    subAgents: entries.flatMap((e) => e.subAgents),
    withRequestHooks: entries.filter((e) => e.hasRequestHooks),
    hostReservedToolNames: new Set(options.reservedToolNames ?? []),
    withSharedState: entries.filter((e) => e.hasSharedState)
  })
}

// ---------------------------------------------------------------------------------------------
// Shared state

/** What one plugin's `getSharedState` gave, or how it failed. */
export type SharedStateRead =
  | { readonly plugin: string; readonly value: unknown }
  | { readonly plugin: string; readonly failure: unknown }

/** Shared state that cannot be assembled: every problem, each worded for a `[boot-error]` line. */
export class SharedStateError extends Data.TaggedError("SharedStateError")<{
  readonly reason: "InvalidSharedState"
  readonly errors: ReadonlyArray<string>
}> {
  /** One `[boot-error] <message>` line per problem. */
  get lines(): ReadonlyArray<string> {
    return this.errors.map((e) => `[boot-error] ${e}`)
  }
  override get message(): string {
    return this.errors.join("\n")
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value)

/**
 * Assembles `context.shared` from the values the plugins' `getSharedState` hooks gave (read
 * by the host in `withSharedState` order; the reading may do I/O, so it is the host's). Each
 * value must be an object; `shared` is one namespace, like tool names: a key belongs to the
 * plugin that registers it, and a key two plugins register is an error naming both, not a
 * silent overwrite. A failed read is an error naming the plugin. Every problem is reported.
 */
export const mergeSharedState = (
  reads: ReadonlyArray<SharedStateRead>
): Either.Either<Readonly<Record<string, unknown>>, SharedStateError> => {
  const shared: Record<string, unknown> = {}
  const owners = new Map<string, string>()
  const errors: string[] = []
  for (const read of reads) {
    const plugin = shown(String(read.plugin))
    if ("failure" in read) {
      errors.push(`Plugin '${plugin}' getSharedState failed: ${describe(read.failure)}`)
      continue
    }
    if (!isRecord(read.value)) {
      const got = read.value === null ? "null" : Array.isArray(read.value) ? "an array" : typeof read.value
      errors.push(`Plugin '${plugin}' getSharedState must return an object (got ${got}).`)
      continue
    }
    for (const [key, value] of Object.entries(read.value)) {
      const owner = owners.get(key)
      if (owner !== undefined) {
        errors.push(
          `Plugin '${plugin}' shared state key '${shown(key)}' is already registered by plugin '${owner}' (shared state is one namespace).`
        )
        continue
      }
      owners.set(key, plugin)
      // defineProperty, not assignment: a key such as `__proto__` stays a plain key.
      Object.defineProperty(shared, key, { value, enumerable: true, writable: true, configurable: true })
    }
  }
  return errors.length > 0
    ? Either.left(new SharedStateError({ reason: "InvalidSharedState", errors }))
    : Either.right(shared)
}

/**
 * Reads every plugin's `getSharedState` once, in `withSharedState` order (a plugin after those it
 * `dependsOn`), and merges the values by `mergeSharedState`'s rule; what a host does at boot, for
 * embedders too. `host` holds the host's own entries (a ledger, a client): their keys are taken,
 * so a plugin that registers one is an error as well, never a silent overwrite either way.
 */
export const readSharedState = (
  catalog: Catalog,
  host: Readonly<Record<string, unknown>> = {}
): Effect.Effect<Readonly<Record<string, unknown>>, SharedStateError> =>
  Effect.gen(function* () {
    const reads: Array<SharedStateRead> = []
    for (const entry of catalog.withSharedState) {
      reads.push(
        yield* Effect.tryPromise({
          try: async () => entry.plugin.getSharedState?.(),
          catch: (failure) => failure
        }).pipe(
          Effect.match({
            onSuccess: (value): SharedStateRead => ({ plugin: entry.name, value }),
            onFailure: (failure): SharedStateRead => ({ plugin: entry.name, failure })
          })
        )
      )
    }
    const taken: Array<string> = []
    for (const read of reads) {
      if ("failure" in read || !isRecord(read.value)) continue
      for (const key of Object.keys(read.value)) {
        if (Object.hasOwn(host, key)) {
          taken.push(
            `Plugin '${shown(read.plugin)}' shared state key '${shown(key)}' is reserved by the host.`
          )
        }
      }
    }
    const merged = mergeSharedState(reads)
    const errors = [...taken, ...(Either.isLeft(merged) ? merged.left.errors : [])]
    if (errors.length > 0 || Either.isLeft(merged)) {
      return yield* Effect.fail(new SharedStateError({ reason: "InvalidSharedState", errors }))
    }
    const shared: Record<string, unknown> = { ...merged.right }
    for (const [key, value] of Object.entries(host)) {
      Object.defineProperty(shared, key, { value, enumerable: true, writable: true, configurable: true })
    }
    return shared
  })

// ---------------------------------------------------------------------------------------------
// Per-request tools and sub-agents

/**
 * A per-request tool or sub-agent that cannot be offered. Hosts log it and run the request
 * without that tool: one bad tool must not take the whole turn down.
 */
export class RequestToolError extends Data.TaggedError("RequestToolError")<{
  /**
   * `UnknownPlugin`: the plugin is not in the catalog. `InvalidTool`: the tool breaks a rule a
   * boot-time tool would be rejected for. `NameTaken`: the name is a meta-tool's, or a catalog
   * tool's or boot-time sub-agent's (tool names are one flat namespace).
   */
  readonly reason: "UnknownPlugin" | "InvalidTool" | "NameTaken"
  readonly plugin: string
  readonly errors: ReadonlyArray<string>
}> {
  override get message(): string {
    return this.errors.join(" ")
  }
}

// Names a request tool may not take, per catalog: meta-tools, catalog tools, boot sub-agents.
const takenCache = new WeakMap<Catalog, ReadonlyMap<string, string>>()

const takenNames = (catalog: Catalog): ReadonlyMap<string, string> => {
  let taken = takenCache.get(catalog)
  if (taken === undefined) {
    const names = new Map<string, string>()
    for (const [name, tool] of catalog.toolsByName) names.set(name, tool.plugin)
    for (const { tool } of catalog.subAgents) names.set(tool.name, tool.plugin)
    taken = names
    takenCache.set(catalog, taken)
  }
  return taken
}

const resolvePerRequest = (
  catalog: Catalog,
  plugin: string,
  kind: "per-request tool" | "sub-agent",
  resolve: (ctx: Tools.ToolContext) => CatalogTool | undefined
): Either.Either<CatalogTool, RequestToolError> => {
  const entry = catalog.byName.get(plugin)
  if (entry === undefined) {
    return Either.left(
      new RequestToolError({
        reason: "UnknownPlugin",
        plugin,
        errors: [`Plugin '${shown(String(plugin))}' is not in the catalog; its ${kind}s cannot be offered.`]
      })
    )
  }
  const errors: string[] = []
  const title = Tools.readQuietly(entry.manifest, "title")
  const tool = resolve({
    kind,
    name: entry.name,
    visibility: entry.visibility,
    prefix: typeof title === "string" ? title : entry.name,
    errors,
    warnings: [],
    seen: new Set<string>(),
    resolved: [],
    onDemandTools: [],
    alwaysTools: []
  })
  if (tool === undefined || errors.length > 0) {
    return Either.left(new RequestToolError({ reason: "InvalidTool", plugin, errors }))
  }
  // A per-request tool takes no name a boot-time one could not: the meta-tools', the host's.
  const meta = RESERVED_TOOL_NAMES.includes(tool.name)
  const hosts = !meta && catalog.hostReservedToolNames?.has(tool.name) === true
  const owner = meta || hosts ? undefined : takenNames(catalog).get(tool.name)
  if (meta || hosts || owner !== undefined) {
    const whose = meta
      ? "a name reserved for the runtime's meta-tools"
      : hosts
        ? "a name the host reserves"
        : `a name plugin '${shown(owner!)}' registers at boot`
    return Either.left(
      new RequestToolError({
        reason: "NameTaken",
        plugin,
        errors: [
          `Plugin '${shown(plugin)}' ${kind} '${tool.name}' takes ${whose} (tool names are one flat namespace).`
        ]
      })
    )
  }
  return Either.right(tool)
}

/**
 * Resolves a tool a plugin's `getRequestTools` returned, by the rules of boot-time tools: a
 * valid name and description, a handler, a known visibility (a silent plugin's tools stay
 * silent), a JSON Schema for its input, the `[<manifest.title>] ` prefix, and a name no
 * meta-tool, catalog tool or boot-time sub-agent has.
 */
export const resolveRequestTool = (
  catalog: Catalog,
  plugin: string,
  tool: PluginTool
): Either.Either<CatalogTool, RequestToolError> =>
  resolvePerRequest(catalog, plugin, "per-request tool", (ctx) => {
    if (tool === null || typeof tool !== "object") {
      ctx.errors.push(
        `Plugin '${shown(ctx.name)}' per-request tool must be an object (got ${tool === null ? "null" : typeof tool}).`
      )
      return undefined
    }
    Tools.resolveTool(tool, undefined, ctx)
    return ctx.resolved[0]
  })

/**
 * Resolves a sub-agent a plugin's `getRequestSubAgents` returned, as a boot-time sub-agent is
 * resolved: a tool with `SubAgentInput` arguments and the plugin's visibility.
 */
export const resolveSubAgent = (
  catalog: Catalog,
  plugin: string,
  spec: SubAgentSpec
): Either.Either<CatalogSubAgent, RequestToolError> =>
  Either.map(
    resolvePerRequest(catalog, plugin, "sub-agent", (ctx) => Tools.checkSubAgent(spec, undefined, ctx)?.tool),
    (tool) => ({ plugin: tool.plugin, spec, tool })
  )

/** `make`, throwing the `CatalogBootError`: for tests and scripts. */
export const unsafeMake = (plugins: ReadonlyArray<Plugin>, options?: MakeOptions): Catalog =>
  Either.getOrThrowWith(make(plugins, options), (error) => error)
