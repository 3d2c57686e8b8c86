/**
 * One turn of an AI SDK agent over a plugboard catalog (docs/ai-sdk.md): what the app passes to
 * its own `generateText` / `streamText` call. Every rule is core's; this module keeps the turn's
 * state and translates.
 *
 * - `system`: the app's prompt, the Tier-1 block and the offered plugins' prompt sections
 *   (`SystemPrompt.compose`).
 * - `tools`: the step's offer as AI SDK tools (`Offer.offer`; see `internal/toolSet.ts`).
 * - `prepareStep`: fixes the offer of each step before the model is called, so that a load in step
 *   1 is offered in step 2 (appended: the prefix a provider caches survives), and recomposes the
 *   system prompt the same way.
 * - Each call is decided by core (`ToolCall.plan`): a call to a tool not offered at that step never
 *   runs and is answered with core's refusal; the meta-tools answer with core's text; a tool's
 *   arguments get core's one retry (`ToolCall.execute`).
 *
 * The turn's `loadedPlugins` only grows: it starts as the union of what the history's loads say
 * (`loadedFromMessages`) and what the app passes, and every load adds to it.
 */
import {
  Access,
  type Catalog,
  GraphState,
  LoadedPlugins,
  MetaTools,
  makeRuntimeContext,
  Offer,
  type RuntimeContext,
  type RuntimeLogger,
  SystemPrompt,
  ToolCall,
  type ToolProgress
} from "@plugboard/core"
import { jsonSchema, type ToolSet } from "ai"
import { Either } from "effect"
import type { ToolCallEvent, TurnCallbacks } from "./Events.js"
import { makeToolSet, type SdkTool, type SdkToolOptions } from "./internal/toolSet.js"
import { loadedFromMessages, type ToolResultMessage } from "./LoadedFromMessages.js"
import { fromAnswer } from "./ToolAnswerError.js"

/** Ranks plugins for `list_capabilities`' query with an embedder (core's `SemanticIndex`). */
export type QueryRanking = (query: string) => Promise<ToolCall.Ranked>

/** What the turn is built from: the catalog's side (`createPlugboard`) and the request's. */
export interface TurnOptions extends TurnCallbacks {
  /**
   * The conversation so far, as the app passes it to the SDK: the `load_capability` answers in it
   * say what the thread has loaded (docs/ai-sdk.md#where-loadedplugins-lives).
   */
  readonly messages?: ReadonlyArray<ToolResultMessage> | undefined
  /** Plugins the thread loaded that the app kept itself (`onPluginsLoaded`); joined to the above. */
  readonly loadedPlugins?: ReadonlyArray<string> | undefined
  /** The app's own system prompt; the Tier-1 block and the plugins' sections follow it. */
  readonly system?: string | undefined
  /** The user, for tool handlers (`context.user`) and for `requires` (`Access`). */
  readonly user?:
    | { readonly did: string; readonly capabilities?: ReadonlyArray<Access.Capability> }
    | undefined
  /** The conversation's id, for tool handlers (`context.session.id`). */
  readonly sessionId?: string | undefined
  /** Aborts the turn's tool handlers (the SDK's own `abortSignal` per call is honoured too). */
  readonly signal?: AbortSignal | undefined
}

/** What a turn needs from the catalog's side. */
export interface TurnDeps {
  readonly catalog: Catalog.Catalog
  readonly shared: Readonly<Record<string, unknown>>
  readonly logger: RuntimeLogger
  readonly rank?: QueryRanking | undefined
}

/** The prepareStep answer: the system prompt of the step (`system` for AI SDK 6, `instructions` for 7). */
export interface StepSettings {
  readonly system: string
  readonly instructions: string
}

/** One turn's pieces for `generateText` / `streamText` (docs/ai-sdk.md#use-it). */
export interface CatalogTurn {
  /** The system prompt as the turn begins. */
  readonly system: string
  /** Pass as `tools`; its keys are the current step's offer. Do not spread or copy it. */
  readonly tools: ToolSet
  /** Pass as `prepareStep` (or call it from yours and merge what it returns). */
  readonly prepareStep: (options?: unknown) => Promise<StepSettings>
  /** The thread's `loadedPlugins` now: the history's, the app's, and this turn's loads. */
  readonly loadedPlugins: ReadonlyArray<string>
  /** The names offered at the current step, in order. */
  readonly offered: ReadonlyArray<string>
}

// One schema object per offered tool, kept as long as the catalog's tool is: requests share them.
const schemas = new WeakMap<Offer.OfferedTool, unknown>()
const schemaOf = (tool: Offer.OfferedTool): unknown => {
  let schema = schemas.get(tool)
  if (schema === undefined) {
    schema = jsonSchema(tool.parameters as Parameters<typeof jsonSchema>[0])
    schemas.set(tool, schema)
  }
  return schema
}
// A name that was not offered: any arguments, since the call is answered without running anything.
const anyInput = jsonSchema({ type: "object" })

const errorText = (e: unknown): string => (e instanceof Error ? e.message : String(e))

/** Builds a turn (see the module doc). */
export const makeTurn = (deps: TurnDeps, options: TurnOptions = {}): CatalogTurn => {
  const { catalog, logger } = deps
  const view = Access.view(catalog, options.user?.capabilities)
  const did = options.user?.did ?? "did:plugboard:anonymous"
  const sessionId = options.sessionId ?? "ai-sdk"
  const base = options.system ?? ""
  let loaded = LoadedPlugins.union(
    options.messages === undefined ? LoadedPlugins.empty : loadedFromMessages(options.messages),
    LoadedPlugins.fromUnknown(options.loadedPlugins ?? [])
  )
  // The current step's offer: replaced only at a step's start (`prepareStep`), so that a load
  // never changes what the calls of its own step may run.
  let offered: ReadonlyArray<Offer.OfferedTool> = []
  let offeredByName = new Map<string, Offer.OfferedTool>()
  let offeredFor: LoadedPlugins.LoadedPlugins | undefined
  let prepared = false
  const fixOffer = (): void => {
    if (offeredFor === loaded) return
    offered = Offer.offer(catalog, loaded, [], view)
    offeredByName = new Map(offered.map((t) => [t.name, t] as const))
    offeredFor = loaded
  }
  fixOffer()
  const failures = new Map<string, number>()
  const madeTools = new Map<string, SdkTool>()

  const notify = <E>(name: keyof TurnCallbacks, callback: ((event: E) => void) | undefined, event: E) => {
    if (callback === undefined) return
    try {
      callback(event)
    } catch (error) {
      logger.warn(`ai-sdk: the turn's ${name} callback threw; ignored`, { error: errorText(error) })
    }
  }

  const contextFor = (call: ToolCallEvent, sdk: SdkToolOptions): RuntimeContext => {
    const signal =
      sdk.abortSignal !== undefined && options.signal !== undefined
        ? AbortSignal.any([sdk.abortSignal, options.signal])
        : (sdk.abortSignal ?? options.signal)
    const context = makeRuntimeContext({
      state: {
        ...GraphState.initial({ did, client: "portal" }),
        // The SDK's messages of this step: what a handler reads as `history.messages`.
        messages: (sdk.messages ?? []) as ReadonlyArray<GraphState.StateMessage>,
        loadedPlugins: loaded
      },
      sessionId,
      did,
      capabilities: options.user?.capabilities,
      shared: deps.shared,
      logger,
      ...(signal === undefined ? {} : { signal })
    })
    return {
      ...context,
      toolCall: {
        id: call.toolCallId,
        name: call.toolName,
        progress: (progress: ToolProgress) =>
          notify("onToolProgress", options.onToolProgress, { ...call, progress })
      }
    }
  }

  /** Decides and runs one call; resolves with the answer's text or rejects with `ToolAnswerError`. */
  const run = async (name: string, args: unknown, sdk: SdkToolOptions): Promise<string> => {
    const step: ToolCall.Step = { catalog, offered, loaded, view }
    let plan: ToolCall.Plan
    if (name === MetaTools.LOAD_CAPABILITY && offeredByName.has(name)) {
      // Loads apply at once, in the order they run: a later load of the same step sees them.
      const load = MetaTools.loadCapability(catalog, loaded, args, [], view)
      plan = ToolCall.plan(step, { name, args }, { load })
      if (Either.isRight(load) && load.right.newlyLoaded.length > 0) {
        loaded = load.right.loadedPlugins
        notify("onPluginsLoaded", options.onPluginsLoaded, {
          toolCallId: sdk.toolCallId,
          names: load.right.newlyLoaded,
          loadedPlugins: loaded
        })
      }
    } else if (name === MetaTools.LIST_CAPABILITIES && offeredByName.has(name)) {
      plan = ToolCall.plan(step, { name, args }, { loadedAfter: loaded, ranked: await rankOf(args) })
    } else {
      plan = ToolCall.plan(step, { name, args })
    }
    const call: ToolCallEvent = { toolCallId: sdk.toolCallId, toolName: name, args, plugin: plan.plugin }
    notify("onToolStart", options.onToolStart, call)
    let executed: ToolCall.Executed
    if (plan._tag === "Answer") {
      executed = { answer: plan.answer }
    } else {
      const target = ToolCall.catalogTool(catalog, plan.tool)
      if (target === undefined) {
        executed = { answer: ToolCall.noHandler(name) }
      } else {
        const previous = failures.get(name) ?? 0
        executed = await ToolCall.execute(
          name,
          target.tool.input,
          target.tool.handler,
          args,
          previous,
          contextFor(call, sdk)
        )
        failures.set(name, ToolCall.countFailure(previous, executed.answer.outcome))
      }
    }
    notify("onToolEnd", options.onToolEnd, {
      ...call,
      outcome: executed.answer.outcome,
      text: executed.answer.content,
      output: executed.output
    })
    const error = fromAnswer(name, executed.answer)
    if (error !== undefined) throw error
    return executed.answer.content
  }

  const rankOf = async (args: unknown): Promise<ToolCall.Ranked | undefined> => {
    const query = (args as { query?: unknown } | null | undefined)?.query
    if (deps.rank === undefined || typeof query !== "string" || query.trim() === "") return undefined
    try {
      return await deps.rank(query)
    } catch (error) {
      logger.warn("list_capabilities: the embedder's ranking failed; ranking lexically", {
        error: errorText(error)
      })
      return undefined
    }
  }

  const tools = makeToolSet({
    names: () => {
      if (!prepared && offeredFor !== loaded) {
        throw new TypeError(
          "plugboard: this turn loaded plugins but its offer was never advanced. Pass the turn's prepareStep to generateText / streamText (prepareStep: turn.prepareStep), or call it from your own prepareStep: it fixes each step's tools."
        )
      }
      return offered.map((t) => t.name)
    },
    offers: (name) => offeredByName.has(name),
    tool: (name) => {
      const spec = offeredByName.get(name)
      // A tool object is bound to its offered spec: a name offered later gets a fresh one.
      const key = spec === undefined ? `\u0000${name}` : name
      let made = madeTools.get(key)
      if (made === undefined) {
        made = {
          ...(spec === undefined ? {} : { description: spec.description }),
          inputSchema: spec === undefined ? anyInput : schemaOf(spec),
          execute: (input, sdk) => run(name, input, sdk)
        }
        madeTools.set(key, made)
      }
      return made
    }
  })

  const systemFor = (plugins: LoadedPlugins.LoadedPlugins): string =>
    SystemPrompt.compose({ basePrompt: base, catalog, loadedPlugins: plugins, view })

  return {
    system: systemFor(loaded),
    // The SDK's ToolSet type is that of the app's `ai` (6 or 7); the objects are what `tool()` builds.
    tools: tools as unknown as ToolSet,
    prepareStep: async () => {
      prepared = true
      fixOffer()
      const system = systemFor(loaded)
      return { system, instructions: system }
    },
    get loadedPlugins() {
      return loaded
    },
    get offered() {
      return offered.map((t) => t.name)
    }
  }
}
