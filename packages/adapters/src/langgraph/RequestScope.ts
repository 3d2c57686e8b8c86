/**
 * What one request adds to the catalog cached at boot: the per-request tools and sub-agents of
 * `getRequestTools` / `getRequestSubAgents`, plus the boot-time sub-agents and middlewares
 * (read once per catalog, then cached). Sub-agents become tools; their `init` runs with
 * `Promise.allSettled` semantics: a failure is logged and that sub-agent is skipped.
 */
import type {
  Catalog,
  Offer,
  PluginMiddleware,
  PluginTool,
  RuntimeContext,
  RuntimeLogger,
  SubAgentSpec
} from "@plugboard/core"
import { JSONSchema, Schema } from "effect"

/** A tool that exists only for this request: a `getRequestTools` tool or a sub-agent. */
export interface DynamicTool {
  readonly plugin: string
  readonly offered: Offer.OfferedTool
  /** Effective visibility: the tool's override, else the plugin's. */
  readonly visibility: "always" | "on-demand" | "silent"
  readonly input: Schema.Schema.AnyNoContext
  /** Runs with the input `input` decoded (the graph validates before calling). */
  readonly run: (input: never, context: RuntimeContext) => unknown
  readonly kind: "request-tool" | "sub-agent"
}

/** A middleware with the plugin it came from, in catalog order. */
export interface OwnedMiddleware {
  readonly plugin: string
  readonly middleware: PluginMiddleware
}

interface BootCache {
  readonly middlewares: ReadonlyArray<OwnedMiddleware>
  readonly subAgents: ReadonlyArray<{ readonly entry: Catalog.CatalogEntry; readonly spec: SubAgentSpec }>
  readonly withRequestHooks: ReadonlyArray<Catalog.CatalogEntry>
}

const bootCache = new WeakMap<Catalog.Catalog, BootCache>()

/**
 * Reads the boot-time hooks (`middlewares`, `getMiddlewares`, `getSubAgents`) once per catalog.
 * Hosts call it at boot so that a throwing hook fails the boot, not the first request.
 */
export const prepareCatalog = (catalog: Catalog.Catalog): void => {
  bootHooks(catalog)
}

const bootHooks = (catalog: Catalog.Catalog): BootCache => {
  let cached = bootCache.get(catalog)
  if (cached !== undefined) return cached
  const middlewares: Array<OwnedMiddleware> = []
  const subAgents: Array<{ entry: Catalog.CatalogEntry; spec: SubAgentSpec }> = []
  const withRequestHooks: Array<Catalog.CatalogEntry> = []
  // TODO(core): "middleware in catalog order" and the boot cache of getSubAgents/getMiddlewares
  // are catalog facts; they belong on Catalog once core exposes them.
  for (const entry of catalog.entries) {
    const p = entry.plugin
    for (const m of p.middlewares ?? []) middlewares.push({ plugin: entry.name, middleware: m })
    for (const m of p.getMiddlewares?.() ?? []) middlewares.push({ plugin: entry.name, middleware: m })
    for (const spec of p.getSubAgents?.() ?? []) subAgents.push({ entry, spec })
    if (p.getRequestTools !== undefined || p.getRequestSubAgents !== undefined) withRequestHooks.push(entry)
  }
  cached = { middlewares, subAgents, withRequestHooks }
  bootCache.set(catalog, cached)
  return cached
}

const schemaCache = new WeakMap<object, Readonly<Record<string, unknown>>>()

// TODO(core): Catalog derives tool parameters the same way but does not export it.
const parametersOf = (input: Schema.Schema.AnyNoContext, jsonSchema?: Readonly<Record<string, unknown>>) => {
  if (jsonSchema !== undefined) return jsonSchema
  let p = schemaCache.get(input)
  if (p === undefined) {
    const { $schema: _drop, ...rest } = JSONSchema.make(input) as unknown as Record<string, unknown>
    p = rest
    schemaCache.set(input, p)
  }
  return p
}

/** The argument schema of every sub-agent tool: the task delegated to it. */
export const SubAgentInput = Schema.Struct({
  task: Schema.String.annotations({ description: "The task to delegate, in plain words." })
})

const subAgentTool = (entry: Catalog.CatalogEntry, spec: SubAgentSpec): DynamicTool => ({
  plugin: entry.name,
  kind: "sub-agent",
  visibility: entry.visibility,
  input: SubAgentInput,
  run: (input: { task: string }, context) => spec.run(input.task, context),
  offered: {
    name: spec.name,
    description: `[${entry.manifest.title}] ${spec.description}`,
    parameters: parametersOf(SubAgentInput),
    kind: "request",
    plugin: entry.name
  }
})

const requestTool = (entry: Catalog.CatalogEntry, tool: PluginTool): DynamicTool => ({
  plugin: entry.name,
  kind: "request-tool",
  visibility: entry.visibility === "silent" ? "silent" : (tool.visibility ?? entry.visibility),
  input: tool.input,
  run: tool.handler,
  offered: {
    name: tool.name,
    description: `[${entry.manifest.title}] ${tool.description}`,
    parameters: parametersOf(tool.input, tool.jsonSchema),
    kind: "request",
    plugin: entry.name
  }
})

/** The per-request part of an agent: dynamic tools and the middlewares in catalog order. */
export interface RequestScope {
  readonly middlewares: ReadonlyArray<OwnedMiddleware>
  /** Request tools, then sub-agents (boot, then per request), before `init` ran. */
  readonly tools: ReadonlyArray<DynamicTool>
  /**
   * Initialises the sub-agents once (memoised): a rejected `init` is logged and that sub-agent
   * is dropped from `ready`. Request tools are always ready.
   */
  readonly init: (context: RuntimeContext) => Promise<ReadonlyArray<DynamicTool>>
  /** The dynamic tools offered for `loadedPlugins`, in `tools` order. */
  readonly extra: (
    ready: ReadonlyArray<DynamicTool>,
    loadedPlugins: ReadonlyArray<string>
  ) => Array<Offer.OfferedTool>
}

const describeError = (e: unknown): string => (e instanceof Error ? e.message : String(e))

/**
 * Runs the per-request hooks. A hook that throws is logged and contributes nothing: a broken
 * plugin must not take the whole turn down (the same rule seed 002 gives sub-agent init).
 */
export const makeRequestScope = async (options: {
  readonly catalog: Catalog.Catalog
  readonly request: {
    readonly userDid: string
    readonly sessionId: string
    readonly shared: Readonly<Record<string, unknown>>
  }
  readonly logger: RuntimeLogger
}): Promise<RequestScope> => {
  const boot = bootHooks(options.catalog)
  const requestTools: Array<DynamicTool> = []
  const subAgents: Array<{ entry: Catalog.CatalogEntry; spec: SubAgentSpec }> = [...boot.subAgents]
  if (boot.withRequestHooks.length > 0) {
    const settled = await Promise.allSettled(
      boot.withRequestHooks.map(async (entry) => ({
        entry,
        tools: (await entry.plugin.getRequestTools?.(options.request)) ?? [],
        subAgents: (await entry.plugin.getRequestSubAgents?.(options.request)) ?? []
      }))
    )
    settled.forEach((s, i) => {
      if (s.status === "rejected") {
        options.logger.error("per-request hook failed; its tools are skipped for this request", {
          plugin: boot.withRequestHooks[i]!.name,
          error: describeError(s.reason)
        })
        return
      }
      for (const tool of s.value.tools) requestTools.push(requestTool(s.value.entry, tool))
      for (const spec of s.value.subAgents) subAgents.push({ entry: s.value.entry, spec })
    })
  }
  const subAgentTools = subAgents.map(({ entry, spec }) => ({ tool: subAgentTool(entry, spec), spec }))
  let initialised: Promise<ReadonlyArray<DynamicTool>> | undefined

  const init = (context: RuntimeContext): Promise<ReadonlyArray<DynamicTool>> => {
    initialised ??= Promise.allSettled(subAgentTools.map(async ({ spec }) => spec.init?.(context))).then(
      (results) => {
        const ready: Array<DynamicTool> = [...requestTools]
        results.forEach((r, i) => {
          const { tool } = subAgentTools[i]!
          if (r.status === "fulfilled") ready.push(tool)
          else
            options.logger.error("sub-agent init failed; it is skipped for this turn", {
              plugin: tool.plugin,
              subAgent: tool.offered.name,
              error: describeError(r.reason)
            })
        })
        return ready
      }
    )
    return initialised
  }

  // TODO(core): which per-request tools a thread is offered is a visibility rule; core's
  // Offer.offer takes them as `extra` without filtering, so the filter lives here for now.
  const extra = (ready: ReadonlyArray<DynamicTool>, loadedPlugins: ReadonlyArray<string>) => {
    const out: Array<Offer.OfferedTool> = []
    for (const t of ready) {
      if (t.visibility === "always" || (t.visibility === "on-demand" && loadedPlugins.includes(t.plugin)))
        out.push(t.offered)
    }
    return out
  }

  return {
    middlewares: boot.middlewares,
    tools: [...requestTools, ...subAgentTools.map((s) => s.tool)],
    init,
    extra
  }
}
