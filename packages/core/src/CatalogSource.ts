/**
 * Plugins that are derived, not written: one MCP server is one plugin, one Agent Skills folder is
 * one plugin (docs/spec/catalog.md#where-plugins-come-from). The adapters read what a source says about itself
 * (an MCP server's `initialize` answer and tool list, a `SKILL.md` front matter); the rules of
 * what manifest that makes, how the operator's config overrides it, which tools are kept, what
 * a colliding tool is renamed to, and what an unreachable server looks like all live here, so a
 * derived plugin obeys the same rules as a TypeScript one: it goes through `Catalog.make`, the
 * same manifest validation, tiers, offer, budget and eval.
 */
import { Schema } from "effect"
import * as ClientTools from "./ClientTools.js"
import { describe } from "./Describe.js"
import { RESERVED_TOOL_NAMES } from "./internal/catalog/model.js"
import { clean, deriveMcpManifest, type McpServerFacts } from "./internal/deriveManifest.js"
import { fnv1a36 } from "./internal/hash.js"
import type { PluginSource } from "./internal/pluginSource.js"
import { TOOL_NAME } from "./internal/tools.js"
import * as ManifestOverrides from "./ManifestOverrides.js"
import type { JsonSchema, Plugin, PluginTool, RequestInfo } from "./Plugin.js"
import type { PluginManifest, Visibility } from "./PluginManifest.js"
import type { RuntimeContext } from "./RuntimeContext.js"

export {
  deriveMcpManifest,
  deriveSkillManifest,
  firstSentence,
  type McpServerFacts,
  placeholderManifest,
  type SkillFacts
} from "./internal/deriveManifest.js"
export type { PluginSource } from "./internal/pluginSource.js"

/**
 * A tool as a source describes it (an MCP server's `tools/list` entry): its own name, title,
 * description and `inputSchema`, before the catalog turns it into a `ToolSpec.ToolSpec`.
 */
export interface SourceToolDescription {
  /** The source's own name for the tool (an MCP tool's name); the offered name may differ. */
  readonly name: string
  readonly title?: string | undefined
  readonly description?: string | undefined
  /** JSON Schema of the arguments, as the source gave it. */
  readonly inputSchema: JsonSchema
  /** The source says the tool may destroy or overwrite things (MCP's `annotations.destructiveHint`). */
  readonly destructiveHint?: boolean | undefined
}

/** A tool as a source describes it, with the function that runs it. */
export interface SourceTool extends SourceToolDescription {
  /** Runs the tool under its source's own name. May return a `ToolOutput`. */
  readonly call: (args: Readonly<Record<string, unknown>>, context: RuntimeContext) => unknown
}

/** Which of a source's tools are kept, and at which visibility (the operator's `tools` key). */
export interface ToolPolicy {
  /** Only these tools (by the source's names); absent: all. */
  readonly allow?: ReadonlyArray<string> | undefined
  /** Never these. */
  readonly deny?: ReadonlyArray<string> | undefined
  /** Per-tool visibility, overriding the plugin's (docs/spec/tiers.md#per-tool-override). */
  readonly visibility?: Readonly<Record<string, Visibility>> | undefined
}

/**
 * How a manifest that speaks of the plugin's tools is derived: from the tools the plugin keeps,
 * called by `toPlugins` after the operator's `tools.allow` / `tools.deny` and the schema checks,
 * so no summary, `whenToUse` entry or tag names a tool the model cannot call.
 */
export type DeriveManifest = (kept: ReadonlyArray<SourceToolDescription>) => PluginManifest

/** One derived plugin before the catalog: its facts, and how they make a manifest. */
export interface DerivedPluginSpec {
  /** The plugin's name: the config key of an MCP server, the skill's `name`. */
  readonly name: string
  readonly source: PluginSource
  /**
   * The derived manifest: a `DeriveManifest` when it depends on the tools (an MCP server's,
   * `mcpManifest`), derived from the tools kept; else the manifest itself (`deriveSkillManifest`,
   * `placeholderManifest`), which must then say nothing of tools a policy could remove.
   */
  readonly manifest: PluginManifest | DeriveManifest
  /** The operator's fields over the derived ones (any manifest field); checked by `override`. */
  readonly override?: unknown
  readonly tools: ReadonlyArray<SourceTool>
  readonly policy?: ToolPolicy | undefined
  /** Returned by `load_capability` with the manifest (a skill's body). */
  readonly operatingGuide?: string | undefined
  /** Set when the source cannot be used (a server unreachable at boot and never cached): why. */
  readonly unavailable?: string | undefined
  /**
   * Tools the source gained after boot (an MCP `tools/list_changed`), read per request. Named by
   * the same rule as boot tools and offered after them: the offer is appended to, never reordered.
   */
  readonly laterTools?: (() => ReadonlyArray<SourceTool>) | undefined
}

/** The result of `toPlugins`: plugins for `Catalog.make`, and what the operator should read. */
export interface DerivedPlugins {
  readonly plugins: ReadonlyArray<Plugin>
  /** Hard problems (a malformed override, a bad name): boot stops, each a `[boot-error]`. */
  readonly errors: ReadonlyArray<string>
  /** Soft ones (a tool left out, a policy naming no tool): each a `[boot-warning]`. */
  readonly warnings: ReadonlyArray<string>
}

// ---------------------------------------------------------------------------------------------
// Deriving a manifest (the rules: internal/deriveManifest.ts, docs/mounting.md#the-derived-manifest)

/**
 * An MCP server's manifest, derived by `toPlugins` from the tools it keeps (`deriveMcpManifest`
 * over the server's facts with only those tools): a tool the operator denied, or one left out for
 * its schema, is named in neither the summary nor `whenToUse` nor the tags
 * (docs/mounting.md).
 */
export const mcpManifest =
  (name: string, facts: Omit<McpServerFacts, "tools">): DeriveManifest =>
  (kept) =>
    deriveMcpManifest(name, { serverInfo: facts.serverInfo, instructions: facts.instructions, tools: kept })

// ---------------------------------------------------------------------------------------------
// The operator's override

/**
 * The operator's manifest fields over the derived ones, by the one rule of every override
 * (`ManifestOverrides.apply`): each field given replaces the derived one whole; a field of the
 * wrong type is an error naming it (`where` says where it was written, e.g.
 * `mcpServers.github.manifest`); an unknown field is a warning.
 */
export const overrideManifest = (
  derived: PluginManifest,
  override: unknown,
  where: string
): {
  readonly manifest: PluginManifest
  readonly errors: ReadonlyArray<string>
  readonly warnings: ReadonlyArray<string>
  readonly changes: ReadonlyArray<ManifestOverrides.ManifestChange>
} => ManifestOverrides.apply(derived, override, where)

// ---------------------------------------------------------------------------------------------
// Tools: policy, names, schemas

/** Separates a plugin's name from its tool's in a namespaced tool name: `github__create_issue`. */
export const NAMESPACE_SEPARATOR = "__"

/**
 * The namespaced name of a source's tool: `<plugin>__<tool>`, with every character a provider
 * refuses replaced by `_`, and cut to 64 characters with a stable hash of the full name when
 * longer. Deterministic: the same plugin and tool always get the same name.
 */
export const namespacedToolName = (plugin: string, tool: string): string => {
  const full = `${plugin}${NAMESPACE_SEPARATOR}${tool}`.replace(/[^A-Za-z0-9_-]/g, "_")
  if (full.length <= 64) return full
  const suffix = `_${fnv1a36(`${plugin}\u0000${tool}`)}`
  return `${full.slice(0, 64 - suffix.length)}${suffix}`
}

/**
 * Which tools of a source are kept, by the operator's policy: `allow` (when given) keeps only
 * those, `deny` removes; a name in either that the source does not have is a warning (a typo
 * would otherwise silently keep or drop nothing).
 */
export const applyPolicy = <T extends { readonly name: string }>(
  tools: ReadonlyArray<T>,
  policy: ToolPolicy | undefined,
  where: string
): { readonly tools: ReadonlyArray<T>; readonly warnings: ReadonlyArray<string> } => {
  if (policy === undefined) return { tools, warnings: [] }
  const warnings: string[] = []
  const names = new Set(tools.map((t) => t.name))
  for (const [list, key] of [
    [policy.allow, "allow"],
    [policy.deny, "deny"]
  ] as const) {
    for (const n of list ?? []) {
      if (!names.has(n)) warnings.push(`${where}.tools.${key} names '${n}', which the source does not have.`)
    }
  }
  for (const n of Object.keys(policy.visibility ?? {})) {
    if (!names.has(n))
      warnings.push(`${where}.tools.visibility names '${n}', which the source does not have.`)
  }
  const allow = policy.allow === undefined ? undefined : new Set(policy.allow)
  const deny = new Set(policy.deny ?? [])
  return {
    tools: tools.filter((t) => (allow === undefined || allow.has(t.name)) && !deny.has(t.name)),
    warnings
  }
}

/** Any object: the source validates its own arguments against its JSON Schema. */
const SourceArguments = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/** Options of `toPlugins`. */
export interface ToPluginsOptions {
  /**
   * Tool names already taken by the other plugins of the catalog (TypeScript plugins keep their
   * names; a derived tool that collides with one is namespaced) and by the host.
   */
  readonly takenToolNames?: Iterable<string>
  /** Checks a tool's input schema as JSON Schema (the host's, as for client tools). */
  readonly checkSchema?: ClientTools.SchemaChecker
}

/** A tool's input schema by the rules of client tools: an object schema within bounds, valid. */
const schemaProblem = (schema: unknown, check: ClientTools.SchemaChecker | undefined): string | undefined => {
  const shape = ClientTools.checkShape(schema)
  if (shape !== undefined) return shape
  if (check === undefined) return undefined
  try {
    return check(schema as Readonly<Record<string, unknown>>)
  } catch (thrown) {
    return `its schema could not be checked (${describe(thrown)})`
  }
}

const whereOf = (spec: DerivedPluginSpec): string =>
  spec.source.kind === "mcp" ? `mcpServers.${spec.name}` : `skill '${spec.name}' (${spec.source.path})`

/**
 * Turns derived specs into plugins for `Catalog.make`. For each: the tool policy, every input
 * schema checked by the rules of client tools (a tool that fails is left out, with a warning: one
 * bad tool of a third-party server must not stop boot), then the manifest derived from the tools
 * that remain, the operator's override over it, and the names. A source's tool keeps its own name unless a provider would refuse it
 * or another plugin's tool (TypeScript, derived, or the host's) has it too: then it is offered as
 * `namespacedToolName(plugin, tool)` and called under its own name. Every colliding derived tool
 * is renamed, not only the second, so which one keeps the bare name never depends on order.
 */
export const toPlugins = (
  specs: ReadonlyArray<DerivedPluginSpec>,
  options: ToPluginsOptions = {}
): DerivedPlugins => {
  const errors: string[] = []
  const warnings: string[] = []
  // The meta-tools' names are taken too: a server's own `call_tool` is namespaced, not a boot error.
  const taken = new Set([...RESERVED_TOOL_NAMES, ...(options.takenToolNames ?? [])])
  const kept = specs.map((spec) => {
    const where = whereOf(spec)
    const policy = applyPolicy(spec.tools, spec.policy, where)
    warnings.push(...policy.warnings)
    const tools = policy.tools.filter((t) => {
      const problem = schemaProblem(t.inputSchema, options.checkSchema)
      if (problem !== undefined) warnings.push(`${where} tool '${t.name}' is left out: ${problem}.`)
      return problem === undefined
    })
    return { spec, where, tools }
  })
  // How many derived plugins have each tool name: a name two of them share is namespaced in both.
  const uses = new Map<string, number>()
  for (const { tools } of kept) {
    for (const n of new Set(tools.map((t) => t.name))) uses.set(n, (uses.get(n) ?? 0) + 1)
  }
  // A clash is told, not only resolved: an operator reading `inspect` or the boot log learns which
  // servers overlap (often two servers doing the same job) and what the model is offered instead.
  // Servers only: every skill has plugboard's own `read_file`, namespaced by design.
  const holders = new Map<string, string[]>()
  for (const { spec, tools } of kept) {
    if (spec.source.kind !== "mcp") continue
    for (const n of new Set(tools.map((t) => t.name)))
      if ((uses.get(n) ?? 0) > 1) holders.set(n, [...(holders.get(n) ?? []), spec.name])
  }
  for (const [n, plugins] of holders) if (plugins.length < 2) holders.delete(n)
  warnings.push(...toolNameClashes(holders))
  const nameOf = (plugin: string, tool: string): string =>
    TOOL_NAME.test(tool) && !taken.has(tool) && (uses.get(tool) ?? 0) <= 1
      ? tool
      : namespacedToolName(plugin, tool)
  const bootNames = new Set<string>([...taken])
  const plugins = kept.map(({ spec, where, tools }) => {
    const {
      manifest,
      errors: e,
      warnings: w,
      changes
    } = overrideManifest(
      typeof spec.manifest === "function" ? spec.manifest(tools) : spec.manifest,
      spec.override,
      `${where}.manifest`
    )
    errors.push(...e)
    warnings.push(...w)
    const visibilityOf = (t: SourceTool): Visibility | undefined => spec.policy?.visibility?.[t.name]
    const pluginTools = tools.map((t) => {
      const name = nameOf(spec.name, t.name)
      bootNames.add(name)
      return toolOf(t, name, visibilityOf(t))
    })
    const own = new Set(tools.map((t) => t.name))
    const later = spec.laterTools
    const plugin: Plugin = {
      name: spec.name,
      manifest,
      tools: pluginTools,
      source: changes.length === 0 ? spec.source : { ...spec.source, overrides: changes },
      ...(spec.operatingGuide === undefined ? {} : { operatingGuide: spec.operatingGuide }),
      ...(spec.unavailable === undefined ? {} : { unavailable: spec.unavailable }),
      ...(later === undefined
        ? {}
        : {
            getRequestTools: (_request: RequestInfo) => {
              const added = applyPolicy(
                later().filter((t) => !own.has(t.name)),
                spec.policy,
                where
              ).tools
              return added
                .filter((t) => schemaProblem(t.inputSchema, options.checkSchema) === undefined)
                .map((t) =>
                  toolOf(
                    t,
                    TOOL_NAME.test(t.name) && !bootNames.has(t.name)
                      ? t.name
                      : namespacedToolName(spec.name, t.name),
                    visibilityOf(t)
                  )
                )
            }
          })
    }
    return plugin
  })
  return { plugins, errors, warnings }
}

/**
 * The clashes as warnings: one per set of plugins sharing tool names (two servers doing the same
 * job usually share several), naming the plugins, the names and what is offered instead, in name
 * order so the list is the same on every boot. Long lists are shortened: the count stays exact.
 */
const toolNameClashes = (holders: ReadonlyMap<string, ReadonlyArray<string>>): ReadonlyArray<string> => {
  const byPlugins = new Map<string, { plugins: ReadonlyArray<string>; tools: string[] }>()
  for (const [tool, plugins] of holders) {
    const key = plugins.join("\u0000")
    const group = byPlugins.get(key) ?? { plugins, tools: [] }
    group.tools.push(tool)
    byPlugins.set(key, group)
  }
  const few = (items: ReadonlyArray<string>, max: number): string =>
    items.length <= max
      ? items.join(", ")
      : `${items.slice(0, max).join(", ")} and ${items.length - max} more`
  return [...byPlugins.values()]
    .map(({ plugins, tools }) => ({ plugins, tools: [...tools].sort() }))
    .sort((a, b) => (a.tools[0]! < b.tools[0]! ? -1 : 1))
    .map(
      ({ plugins, tools }) =>
        `${plugins.length} plugins (${few(
          plugins.map((p) => `'${p}'`),
          4
        )}) share ${tools.length === 1 ? "the tool name" : `${tools.length} tool names`} ${few(tools, 8)}: each is offered as <plugin>__<tool> (e.g. ${namespacedToolName(plugins[0]!, tools[0]!)}).`
    )
}

const toolOf = (t: SourceTool, name: string, visibility: Visibility | undefined): PluginTool => ({
  name,
  description: clean(t.description) || clean(t.title) || t.name,
  input: SourceArguments,
  jsonSchema: t.inputSchema,
  ...(visibility === undefined ? {} : { visibility }),
  ...(t.destructiveHint === true ? { destructiveHint: true } : {}),
  handler: (args: Readonly<Record<string, unknown>>, context: RuntimeContext) => t.call(args, context)
})

/** The reason to give for a plugin that cannot be used, as `load_capability` words it. */
export const unavailableMessage = (name: string, reason: string): string =>
  `Plugin '${name}' is unavailable: ${reason} Its tools cannot be used now; tell the user, and do not retry it in this conversation.`
