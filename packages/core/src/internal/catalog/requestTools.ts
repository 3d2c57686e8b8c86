/**
 * Per-request tools and sub-agents (`getRequestTools`, `getRequestSubAgents`): resolved by the
 * rules of boot-time tools, against the catalog their plugin is in.
 */
import { Data, Either } from "effect"
import type { PluginTool, SubAgentSpec } from "../../Plugin.js"
import { shown } from "../text.js"
import * as Tools from "../tools.js"
import type { CatalogSubAgent, CatalogTool } from "./entry.js"
import { type Catalog, RESERVED_TOOL_NAMES } from "./model.js"

/**
 * A per-request tool or sub-agent that cannot be offered. Hosts log it and run the request
 * without that tool: one bad tool must not take the whole turn down.
 */
export class RequestToolError extends Data.TaggedError("RequestToolError")<{
  /**
   * `unknown-plugin`: the plugin is not in the catalog. `invalid-tool`: the tool breaks a rule a
   * boot-time tool would be rejected for. `name-taken`: the name is a meta-tool's, or a catalog
   * tool's or boot-time sub-agent's (tool names are one flat namespace).
   */
  readonly reason: "unknown-plugin" | "invalid-tool" | "name-taken"
  readonly plugin: string
  readonly errors: ReadonlyArray<string>
}> {
  override get message(): string {
    return this.errors.join(" ")
  }
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
        reason: "unknown-plugin",
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
    return Either.left(new RequestToolError({ reason: "invalid-tool", plugin, errors }))
  }
  // A per-request tool takes no name a boot-time one could not: the meta-tools', the host's.
  const meta = RESERVED_TOOL_NAMES.includes(tool.name)
  const hosts = !meta && catalog.hostReservedToolNames?.has(tool.name) === true
  const owner = meta || hosts ? undefined : catalog.index.takenNames.get(tool.name)
  if (meta || hosts || owner !== undefined) {
    const whose = meta
      ? "a name reserved for the runtime's meta-tools"
      : hosts
        ? "a name the host reserves"
        : `a name plugin '${shown(owner!)}' registers at boot`
    return Either.left(
      new RequestToolError({
        reason: "name-taken",
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
