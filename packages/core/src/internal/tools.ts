/**
 * How the catalog checks and resolves what plugins supply: tools, sub-agents (as tools) and
 * middlewares. Shared by boot (`Catalog.make`) and per request (`Catalog.resolveRequestTool`,
 * `Catalog.resolveSubAgent`), so a tool obeys the same rules whenever it appears.
 */
import { Either, Schema } from "effect"
import { describe } from "../Describe.js"
import type { JsonSchema, Plugin, PluginMiddleware, PluginTool, SubAgentSpec } from "../Plugin.js"
import { MANIFEST_FIELDS, Visibility } from "../PluginManifest.js"
import {
  emptyStructJson,
  explainJsonSchemaError,
  inlineTopLevelRef,
  objectSchemaProblem,
  schemaKind
} from "./argumentsSchema.js"
import { readRequires } from "./capability.js"
import type { CatalogSubAgent, CatalogTool } from "./catalog/entry.js"
import { jsonSchemaOf } from "./jsonSchema.js"
import { shown } from "./text.js"

/** Tool names every major provider accepts (OpenAI and Anthropic share this pattern). */
export const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/

// Many tools share one input schema (and hosts rebuild catalogs in tests): derive each once.
// A pure memo of the derivation, keyed on the schema object: no catalog's state.
const schemaCache = new WeakMap<object, JsonSchema>()

/** The tool's JSON Schema, `undefined` when it has neither `jsonSchema` nor an Effect Schema. */
const deriveParameters = (tool: Pick<PluginTool, "input" | "jsonSchema">): JsonSchema | undefined => {
  if (tool.jsonSchema !== undefined) return tool.jsonSchema
  // Cache first: `Schema.isSchema` costs more than the lookup, and a hit proves it anyway.
  const cached = schemaCache.get(tool.input)
  if (cached !== undefined) return cached
  if (!Schema.isSchema(tool.input)) return undefined
  const parameters = Object.freeze(
    emptyStructJson(tool.input.ast) ?? inlineTopLevelRef(jsonSchemaOf(tool.input))
  ) as JsonSchema
  schemaCache.set(tool.input, parameters)
  return parameters
}

/**
 * The JSON Schema a tool's arguments are offered with, derived the way the catalog derives it:
 * `jsonSchema` when the tool sets one, else the JSON Schema of its Effect Schema `input`
 * (without `$schema`, a top-level `$ref` inlined, `Schema.Struct({})` as an object schema with no
 * properties; derived once per schema object). Left, with
 * the reason, when the tool has neither, when `input` has no JSON Schema form (naming the field
 * and what to use instead), or when the schema is not an object schema: the rule every tool's
 * arguments obey, MCP and client tools' too (`internal/argumentsSchema.ts`).
 */
export const toolParameters = (
  tool: Pick<PluginTool, "input" | "jsonSchema">
): Either.Either<JsonSchema, string> => {
  let parameters: JsonSchema | undefined
  try {
    parameters = deriveParameters(tool)
  } catch (thrown) {
    return Either.left(
      `input schema cannot be turned into JSON Schema: ${explainJsonSchemaError(describe(thrown))}`
    )
  }
  if (parameters === undefined) return Either.left("needs an input schema (or a jsonSchema)")
  const problem = objectSchemaProblem(parameters)
  if (problem === undefined) return Either.right(parameters)
  return Either.left(
    tool.jsonSchema !== undefined
      ? `jsonSchema is not an object schema: ${problem}, and it has ${schemaKind(parameters)}`
      : `input is not an object schema: ${problem}, and its JSON Schema has ${schemaKind(parameters)}; use Schema.Struct({ ... }) (one field per argument; a union of shapes becomes one struct with optional fields)`
  )
}

/** The arguments of every sub-agent tool: the task the main agent delegates. */
export const SubAgentInput = Schema.Struct({
  task: Schema.String.annotations({ description: "The task to delegate, in plain words." })
})

/**
 * A sub-agent as a plugin tool: `SubAgentInput` arguments, and a handler that passes the task to
 * `spec.run`. The catalog resolves boot-time sub-agents through it, so a sub-agent is named,
 * described, gated and offered exactly like a tool.
 */
export const subAgentTool = (
  spec: SubAgentSpec
): PluginTool<typeof SubAgentInput.Type, typeof SubAgentInput.Encoded> => ({
  name: spec.name,
  description: spec.description,
  input: SubAgentInput,
  handler: (input, context) => spec.run(input.task, context)
})

export const isVisibility = (v: unknown): v is Visibility =>
  typeof v === "string" && Visibility.literals.includes(v as never)

export const readQuietly = (target: unknown, key: string): unknown => {
  try {
    return target !== null && typeof target === "object"
      ? (target as Record<string, unknown>)[key]
      : undefined
  } catch {
    return undefined
  }
}

/** Every key of `Plugin` (packages/core/src/Plugin.ts): anything else is a boot error. */
export const PLUGIN_KEYS: ReadonlySet<string> = new Set([
  "name",
  "manifest",
  "tools",
  "dependsOn",
  "prompt",
  "getTools",
  "getSubAgents",
  "getMiddlewares",
  "getSharedState",
  "getRequestTools",
  "getRequestSubAgents",
  "middlewares",
  "routes",
  "operatingGuide",
  "unavailable",
  "source",
  "requires"
])

/** Every key of `PluginTool`: anything else is a boot error. */
export const TOOL_KEYS: ReadonlySet<string> = new Set([
  "name",
  "description",
  "input",
  "jsonSchema",
  "visibility",
  "requires",
  "requiresApproval",
  "destructiveHint",
  "handler"
])

const MANIFEST_KEYS: ReadonlySet<string> = new Set(MANIFEST_FIELDS)
const MAX_UNKNOWN_KEYS = 20

/**
 * Reports each own key of `target` outside `known` as one error, `<where> has an unknown key
 * '<key>'.`, saying where a manifest field belongs when it was put at the wrong level: a key the
 * runtime does not read would otherwise be silently ignored (docs/plugins.md#6-what-boot-checks).
 */
export const checkKnownKeys = (
  target: object,
  known: ReadonlySet<string>,
  where: string,
  manifestHome: string,
  errors: string[]
): void => {
  let keys: ReadonlyArray<string>
  try {
    keys = Object.keys(target)
  } catch (thrown) {
    errors.push(`${where} keys could not be read (${describe(thrown)}).`)
    return
  }
  let unknown = 0
  for (const key of keys) {
    if (known.has(key)) continue
    // A huge object is broken, not verbose: name the first few and count the rest.
    if (++unknown > MAX_UNKNOWN_KEYS) continue
    const home = MANIFEST_KEYS.has(key) ? ` (it belongs in ${manifestHome})` : ""
    errors.push(`${where} has an unknown key '${shown(key)}'${home}.`)
  }
  if (unknown > MAX_UNKNOWN_KEYS) errors.push(`${where} has ${unknown - MAX_UNKNOWN_KEYS} more unknown keys.`)
}

/** Reads a plugin's tools (`tools` + `getTools()`); a throwing hook becomes an error. */
export const collectTools = (plugin: Plugin, name: string, errors: string[]): ReadonlyArray<PluginTool> => {
  try {
    // The common case needs no copy: a plain `tools` array and no `getTools`.
    if (plugin.getTools === undefined && Array.isArray(plugin.tools)) return plugin.tools
  } catch {
    // Fall through: the guarded reads below report it.
  }
  const out: PluginTool[] = []
  try {
    const tools = plugin.tools
    if (tools !== undefined) {
      if (Array.isArray(tools)) out.push(...tools)
      else errors.push(`Plugin '${shown(name)}' field 'tools' must be an array.`)
    }
  } catch (thrown) {
    errors.push(`Plugin '${shown(name)}' field 'tools' could not be read (${describe(thrown)}).`)
  }
  try {
    if (plugin.getTools !== undefined) {
      const extra = plugin.getTools()
      if (Array.isArray(extra)) out.push(...extra)
      else errors.push(`Plugin '${shown(name)}' getTools() must return an array.`)
    }
  } catch (thrown) {
    errors.push(`Plugin '${shown(name)}' getTools() threw: ${describe(thrown)}`)
  }
  return out
}

/** What resolving one tool needs from its plugin, and where it reports. */
export interface ToolContext {
  /** How messages call the tool: `tool`, `per-request tool` or `sub-agent`. */
  readonly kind: string
  readonly name: string
  readonly visibility: Visibility
  /** The `[<title>] ` prefix source: the manifest title, or the plugin name when it has none. */
  readonly prefix: string
  readonly errors: string[]
  readonly warnings: string[]
  readonly seen: Set<string>
  readonly resolved: CatalogTool[]
  readonly onDemandTools: CatalogTool[]
  readonly alwaysTools: CatalogTool[]
}

/** Checks one tool and resolves its visibility, description and JSON Schema. */
export const resolveTool = (tool: PluginTool, i: number | undefined, ctx: ToolContext): void => {
  const { kind, name, visibility, prefix, errors, warnings, seen } = ctx
  // A per-request tool has no position worth naming: the hook's list changes per request.
  const nth = i === undefined ? kind : `${kind} #${i}`
  if (tool === null || typeof tool !== "object") {
    errors.push(`Plugin '${shown(name)}' ${nth} must be an object.`)
    return
  }
  const toolName: unknown = tool.name
  if (typeof toolName !== "string" || !TOOL_NAME.test(toolName)) {
    errors.push(
      `Plugin '${shown(name)}' ${nth} has an invalid name ${typeof toolName === "string" ? `'${shown(toolName)}'` : `(got ${typeof toolName})`} (1-64 letters, digits, '_' or '-').`
    )
    return
  }
  if (seen.has(toolName)) {
    errors.push(`Plugin '${shown(name)}' registers ${kind} '${toolName}' more than once.`)
    return
  }
  seen.add(toolName)
  checkKnownKeys(
    tool,
    TOOL_KEYS,
    `Plugin '${shown(name)}' ${kind} '${toolName}'`,
    "the plugin's 'manifest'",
    errors
  )
  if (typeof tool.description !== "string") {
    errors.push(`Plugin '${shown(name)}' ${kind} '${toolName}' description must be a string.`)
    return
  }
  if (tool.description.trim().length === 0) {
    warnings.push(`Plugin '${shown(name)}' ${kind} '${toolName}' has an empty description.`)
  }
  if (typeof tool.handler !== "function") {
    errors.push(`Plugin '${shown(name)}' ${kind} '${toolName}' handler must be a function.`)
  }
  let toolVisibility = visibility
  if (tool.visibility !== undefined) {
    if (!isVisibility(tool.visibility)) {
      errors.push(
        `Plugin '${shown(name)}' ${kind} '${toolName}' has unknown visibility '${shown(String(tool.visibility))}' (expected one of 'always', 'on-demand', 'silent').`
      )
      return
    }
    if (visibility === "silent" && tool.visibility !== "silent") {
      errors.push(
        `Plugin '${shown(name)}' is silent but its ${kind} '${toolName}' sets visibility '${tool.visibility}': a silent plugin is never offered to the model (drop the override or change the plugin's visibility).`
      )
      return
    }
    toolVisibility = tool.visibility
  }
  if (tool.jsonSchema !== undefined && (tool.jsonSchema === null || typeof tool.jsonSchema !== "object")) {
    errors.push(`Plugin '${shown(name)}' ${kind} '${toolName}' jsonSchema must be an object.`)
    return
  }
  const parameters = toolParameters(tool)
  if (Either.isLeft(parameters)) {
    errors.push(`Plugin '${shown(name)}' ${kind} '${toolName}' ${parameters.left}.`)
    return
  }
  const requires = readRequires(
    readQuietly(tool, "requires"),
    `Plugin '${shown(name)}' ${kind} '${toolName}' field 'requires'`,
    errors
  )
  const requiresApproval = readQuietly(tool, "requiresApproval")
  if (requiresApproval !== undefined && typeof requiresApproval !== "boolean") {
    errors.push(
      `Plugin '${shown(name)}' ${kind} '${toolName}' field 'requiresApproval' must be true or false (got ${typeof requiresApproval}).`
    )
    return
  }
  const destructiveHint = readQuietly(tool, "destructiveHint")
  if (destructiveHint !== undefined && typeof destructiveHint !== "boolean") {
    errors.push(
      `Plugin '${shown(name)}' ${kind} '${toolName}' field 'destructiveHint' must be true or false (got ${typeof destructiveHint}).`
    )
    return
  }
  const resolvedTool: CatalogTool = {
    name: toolName,
    plugin: name,
    description: `[${prefix}] ${tool.description}`,
    visibility: toolVisibility,
    parameters: parameters.right,
    tool,
    ...(requires.length === 0 ? {} : { requires }),
    ...(requiresApproval === true ? { requiresApproval: true } : {}),
    ...(destructiveHint === true ? { destructiveHint: true } : {})
  }
  ctx.resolved.push(resolvedTool)
  if (toolVisibility === "on-demand") ctx.onDemandTools.push(resolvedTool)
  else if (toolVisibility === "always") ctx.alwaysTools.push(resolvedTool)
}

/** Reads `getSubAgents()` once; a throwing hook or a non-array is a boot error. */
export const collectSubAgents = (
  plugin: Plugin,
  name: string,
  errors: string[]
): ReadonlyArray<SubAgentSpec> => {
  try {
    if (plugin.getSubAgents === undefined) return []
    if (typeof plugin.getSubAgents !== "function") {
      errors.push(`Plugin '${shown(name)}' getSubAgents must be a function.`)
      return []
    }
    const specs = plugin.getSubAgents()
    if (Array.isArray(specs)) return specs
    errors.push(`Plugin '${shown(name)}' getSubAgents() must return an array.`)
  } catch (thrown) {
    errors.push(`Plugin '${shown(name)}' getSubAgents() threw: ${describe(thrown)}`)
  }
  return []
}

/**
 * Checks a sub-agent spec and resolves it as a tool of its plugin (same name rules, same
 * namespace as the plugin's tools, the plugin's visibility). `undefined` when it is invalid.
 */
export const checkSubAgent = (
  spec: SubAgentSpec,
  i: number | undefined,
  ctx: ToolContext
): CatalogSubAgent | undefined => {
  const where = `Plugin '${shown(ctx.name)}' sub-agent`
  const nth = i === undefined ? where : `${where} #${i}`
  if (spec === null || typeof spec !== "object") {
    ctx.errors.push(`${nth} must be an object.`)
    return undefined
  }
  const label = typeof spec.name === "string" ? `${where} '${shown(spec.name)}'` : nth
  if (typeof spec.run !== "function") {
    ctx.errors.push(`${label} run must be a function.`)
    return undefined
  }
  if (spec.init !== undefined && typeof spec.init !== "function") {
    ctx.errors.push(`${label} init must be a function when set.`)
    return undefined
  }
  const resolved: CatalogTool[] = []
  const before = ctx.errors.length
  resolveTool(subAgentTool(spec), i, {
    ...ctx,
    kind: "sub-agent",
    resolved,
    onDemandTools: [],
    alwaysTools: []
  })
  const tool = resolved[0]
  return tool === undefined || ctx.errors.length > before ? undefined : { plugin: ctx.name, spec, tool }
}

/** Reads `middlewares` then `getMiddlewares()` once; each must be an object of hook functions. */
export const collectMiddlewares = (
  plugin: Plugin,
  name: string,
  errors: string[]
): ReadonlyArray<PluginMiddleware> => {
  const out: PluginMiddleware[] = []
  // `source` names the list in messages: "field 'middlewares'" or "getMiddlewares()".
  const add = (list: unknown, source: string, notArray: string): void => {
    if (list === undefined) return
    if (!Array.isArray(list)) {
      errors.push(`Plugin '${shown(name)}' ${notArray}.`)
      return
    }
    list.forEach((m: unknown, i) => {
      if (m === null || typeof m !== "object") {
        errors.push(`Plugin '${shown(name)}' ${source} middleware #${i} must be an object.`)
        return
      }
      for (const hook of ["beforeModel", "afterModel", "onError"] as const) {
        const fn = (m as Record<string, unknown>)[hook]
        if (fn !== undefined && typeof fn !== "function") {
          errors.push(`Plugin '${shown(name)}' ${source} middleware #${i} ${hook} must be a function.`)
          return
        }
      }
      out.push(m as PluginMiddleware)
    })
  }
  try {
    add(plugin.middlewares, "field 'middlewares'", "field 'middlewares' must be an array")
  } catch (thrown) {
    errors.push(`Plugin '${shown(name)}' field 'middlewares' could not be read (${describe(thrown)}).`)
  }
  try {
    if (plugin.getMiddlewares !== undefined) {
      if (typeof plugin.getMiddlewares !== "function")
        errors.push(`Plugin '${shown(name)}' getMiddlewares must be a function.`)
      else add(plugin.getMiddlewares(), "getMiddlewares()", "getMiddlewares() must return an array")
    }
  } catch (thrown) {
    errors.push(`Plugin '${shown(name)}' getMiddlewares() threw: ${describe(thrown)}`)
  }
  return out
}
