/**
 * What one request adds to the catalog cached at boot: the per-request tools and sub-agents of
 * `getRequestTools` / `getRequestSubAgents`, plus the boot-time sub-agents. Core resolves each
 * (names, prefixes, visibility, JSON Schema: `Catalog.resolveRequestTool`,
 * `Catalog.resolveSubAgent`) and decides which a thread is offered (`Offer.requestTools`);
 * this file runs the hooks and the sub-agents' `init`, with `Promise.allSettled` semantics: a
 * failure is logged and that hook or sub-agent is skipped.
 */
import {
  type Access,
  Catalog,
  describe,
  type LoadedPlugins,
  Offer,
  type PluginTool,
  type RuntimeContext,
  type RuntimeLogger,
  type SubAgentSpec
} from "@plugboard/core"
import { Either, type Schema } from "effect"

/** A tool that exists only for this request: a `getRequestTools` tool or a sub-agent. */
export interface DynamicTool extends Offer.RequestTool {
  readonly input: Schema.Schema.AnyNoContext
  /** Runs with the input `input` decoded (the graph validates before calling). */
  readonly run: (input: never, context: RuntimeContext) => unknown
  readonly kind: "request-tool" | "sub-agent"
}

/** A sub-agent's tool and the spec whose `init` must succeed before it is offered. */
interface SubAgentTool {
  readonly tool: DynamicTool
  readonly spec: SubAgentSpec
}

const toDynamic = (resolved: Catalog.CatalogTool, kind: DynamicTool["kind"]): DynamicTool => ({
  ...Offer.fromRequestTool(resolved),
  input: resolved.tool.input,
  run: resolved.tool.handler,
  kind
})

const subAgentTool = (subAgent: Catalog.CatalogSubAgent): SubAgentTool => ({
  tool: toDynamic(subAgent.tool, "sub-agent"),
  spec: subAgent.spec
})

// Core reads the boot-time hooks once, in `Catalog.make`; this caches their translation.
const bootCache = new WeakMap<Catalog.Catalog, ReadonlyArray<SubAgentTool>>()

const bootSubAgents = (catalog: Catalog.Catalog): ReadonlyArray<SubAgentTool> => {
  let cached = bootCache.get(catalog)
  if (cached === undefined) {
    cached = catalog.subAgents.map(subAgentTool)
    bootCache.set(catalog, cached)
  }
  return cached
}

/**
 * Prepares the adapter's per-catalog translation of the boot-time sub-agents. The hooks
 * themselves (`middlewares`, `getMiddlewares`, `getSubAgents`) are read once by `Catalog.make`,
 * where a throwing one is a boot error; calling this at boot only moves the translation off the
 * first request.
 */
export const prepareCatalog = (catalog: Catalog.Catalog): void => {
  bootSubAgents(catalog)
}

/** The argument schema of every sub-agent tool: the task delegated to it (core's rule). */
export const SubAgentInput = Catalog.SubAgentInput

/** The per-request part of an agent: dynamic tools and the middlewares in catalog order. */
export interface RequestScope {
  readonly middlewares: ReadonlyArray<Catalog.OwnedMiddleware>
  /** Request tools, then sub-agents (boot, then per request), before `init` ran. */
  readonly tools: ReadonlyArray<DynamicTool>
  /**
   * The tools ready for a model call of a thread that has `loaded`: the request tools, and the
   * sub-agents that can be offered (their plugin `always`, or loaded), each initialised the first
   * time it can be (memoised for the request). A sub-agent of a plugin not loaded, or of a silent
   * one, is never initialised; one loaded mid-turn is initialised before the call that offers
   * it. A rejected `init` is logged once and that sub-agent left out for the request
   * (`Promise.allSettled` semantics: the others and the turn go on). `view` is the user's
   * (`Access.view`): a sub-agent they may not be offered is not initialised either.
   */
  readonly init: (
    context: RuntimeContext,
    loaded: LoadedPlugins.LoadedPlugins,
    view?: Access.View
  ) => Promise<ReadonlyArray<DynamicTool>>
}

/** A hook's result as a list; anything but an array (or nothing) fails that plugin's hooks. */
const listOf = <A>(value: unknown, hook: string): ReadonlyArray<A> => {
  if (value === undefined || value === null) return []
  if (!Array.isArray(value)) throw new TypeError(`${hook}() must return an array`)
  return value as ReadonlyArray<A>
}

/**
 * Runs the per-request hooks. A hook that throws is logged and contributes nothing, and so is a
 * tool core rejects: a broken plugin must not take the whole turn down (the same rule as for a
 * sub-agent's init: docs/spec/pipeline.md#per-request-hooks).
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
  const { catalog, logger } = options
  const requestTools: Array<DynamicTool> = []
  const subAgentTools: Array<SubAgentTool> = [...bootSubAgents(catalog)]
  const withHooks = catalog.withRequestHooks
  if (withHooks.length > 0) {
    const settled = await Promise.allSettled(
      withHooks.map(async (entry) => ({
        entry,
        tools: listOf<PluginTool>(await entry.plugin.getRequestTools?.(options.request), "getRequestTools"),
        subAgents: listOf<SubAgentSpec>(
          await entry.plugin.getRequestSubAgents?.(options.request),
          "getRequestSubAgents"
        )
      }))
    )
    const rejected = (error: Catalog.RequestToolError) =>
      logger.error("per-request tool rejected; it is skipped for this request", {
        plugin: error.plugin,
        error: error.message
      })
    settled.forEach((s, i) => {
      if (s.status === "rejected") {
        logger.error("per-request hook failed; its tools are skipped for this request", {
          plugin: withHooks[i]!.name,
          error: describe(s.reason)
        })
        return
      }
      const plugin = s.value.entry.name
      for (const tool of s.value.tools) {
        Either.match(Catalog.resolveRequestTool(catalog, plugin, tool), {
          onLeft: rejected,
          onRight: (resolved) => requestTools.push(toDynamic(resolved, "request-tool"))
        })
      }
      for (const spec of s.value.subAgents) {
        Either.match(Catalog.resolveSubAgent(catalog, plugin, spec), {
          onLeft: rejected,
          onRight: (resolved) => subAgentTools.push(subAgentTool(resolved))
        })
      }
    })
  }
  const initialised = new Map<SubAgentTool, Promise<boolean>>()
  const initOnce = (subAgent: SubAgentTool, context: RuntimeContext): Promise<boolean> => {
    let done = initialised.get(subAgent)
    if (done === undefined) {
      done = Promise.resolve()
        .then(() => subAgent.spec.init?.(context))
        .then(
          () => true,
          (reason: unknown) => {
            logger.error("sub-agent init failed; it is skipped for this turn", {
              plugin: subAgent.tool.plugin,
              subAgent: subAgent.tool.offered.name,
              error: describe(reason)
            })
            return false
          }
        )
      initialised.set(subAgent, done)
    }
    return done
  }

  const init = async (
    context: RuntimeContext,
    loaded: LoadedPlugins.LoadedPlugins,
    view?: Access.View
  ): Promise<ReadonlyArray<DynamicTool>> => {
    // Core's rule decides which sub-agents this thread can be offered; only those initialise.
    const offerable = new Set(
      Offer.requestTools(
        catalog,
        loaded,
        subAgentTools.map((s) => s.tool),
        view
      ).map((t) => t.name)
    )
    const wanted = subAgentTools.filter((s) => offerable.has(s.tool.offered.name))
    const ok = await Promise.all(wanted.map((s) => initOnce(s, context)))
    return [...requestTools, ...wanted.filter((_, i) => ok[i]).map((s) => s.tool)]
  }

  return {
    middlewares: catalog.middlewares,
    tools: [...requestTools, ...subAgentTools.map((s) => s.tool)],
    init
  }
}
