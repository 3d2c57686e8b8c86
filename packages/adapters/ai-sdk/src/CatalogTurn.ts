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
  Approval,
  type Catalog,
  type Connect,
  describe,
  GraphState,
  LoadedPlugins,
  MetaTools,
  makeRuntimeContext,
  Offer,
  type RuntimeContext,
  type RuntimeLogger,
  SystemPrompt,
  ToolCall,
  type ToolProgress,
  type Wait
} from "@plugboard/core"
import { jsonSchema, NoSuchToolError, type ToolSet } from "ai"
import { Either } from "effect"
import type { ToolCallEvent, TurnCallbacks } from "./Events.js"
import {
  appendOffered,
  defineRefused,
  type SdkTool,
  type SdkToolOptions,
  type ToolRecord
} from "./internal/toolSet.js"
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
  /**
   * The plugins this user must connect an account for first, with the link that starts it
   * (core's `Connect`, docs/oauth.md#using-it-from-code): `list_capabilities` lists them with
   * `needsConnect`, and `load_capability` refuses them with the link instead of loading them.
   */
  readonly pending?: Connect.Pending | undefined
}

/** What a turn needs from the catalog's side. */
export interface TurnDeps {
  readonly catalog: Catalog.Catalog
  readonly shared: Readonly<Record<string, unknown>>
  readonly logger: RuntimeLogger
  readonly rank?: QueryRanking | undefined
  /** The operator's list of tools that wait for approval, beside the tools' own `requiresApproval`. */
  readonly approval?: Approval.OperatorList | undefined
}

/**
 * The prepareStep answer: the step's system prompt when a load changed it since the turn began
 * (`system` for AI SDK 6, `instructions` for 7); nothing otherwise, so that the SDK keeps the
 * prompt it was given (the turn's `system`) and its own path.
 */
export interface StepSettings {
  readonly system?: string
  readonly instructions?: string
}

/** One turn's pieces for `generateText` / `streamText` (docs/ai-sdk.md#use-it). */
export interface CatalogTurn {
  /** The system prompt as the turn begins. */
  readonly system: string
  /** Pass as `tools`; its keys are the current step's offer. Do not spread or copy it. */
  readonly tools: ToolSet
  /** Pass as `prepareStep` (or call it from yours and merge what it returns). */
  readonly prepareStep: (options?: unknown) => Promise<StepSettings>
  /**
   * Pass as `repairToolCall` (AI SDK 6: `experimental_repairToolCall`): a call to a tool that was
   * not offered is then answered with core's refusal instead of the SDK's generic error.
   */
  readonly repairToolCall: <C extends RepairedCall>(options: RepairOptions<C>) => Promise<C | null>
  /** The thread's `loadedPlugins` now: the history's, the app's, and this turn's loads. */
  readonly loadedPlugins: ReadonlyArray<string>
  /** The names offered at the current step, in order. */
  readonly offered: ReadonlyArray<string>
}

/** What the SDK passes `repairToolCall` (the part the turn reads). */
export interface RepairOptions<C extends RepairedCall = RepairedCall> {
  readonly toolCall: C
  readonly error: unknown
}

/** A tool call as the SDK's repair sees it (the part the turn reads). */
export interface RepairedCall {
  readonly toolName: string
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
const NO_CHANGE: StepSettings = {}

// A name that was not offered: any arguments, since the call is answered without running anything.
const anyInput = jsonSchema({ type: "object" })

/**
 * The turn's state and rules. A class rather than closures: a request makes one turn, and its
 * methods are shared by every turn instead of being made anew for each.
 *
 * Two offers are kept apart. The record (`tools`) follows `loadedPlugins` at once, so the next model
 * call is offered a load's tools even when the app did not wire `prepareStep`. The gate follows the
 * step: `#offered` is what the model was offered on the call that made the current calls, fixed at
 * the step's start, so a call made in the same step as its plugin's load is refused.
 */
class Turn implements CatalogTurn {
  readonly #deps: TurnDeps
  readonly #options: TurnOptions
  readonly #view: Access.View
  readonly #did: string
  #loaded: LoadedPlugins.LoadedPlugins
  // The gate's offer: the current step's.
  #offered: ReadonlyArray<Offer.OfferedTool> = []
  #offeredNames: ReadonlyArray<string> = []
  #offeredFor: LoadedPlugins.LoadedPlugins | undefined
  // How many messages the current step's calls carry; a call carrying more is of a later step.
  #stepLength: number | undefined
  // The record's offer: what `tools` lists.
  #listed: ReadonlyArray<Offer.OfferedTool> = []
  #failures: Map<string, number> | undefined
  readonly #record: ToolRecord = {}
  // What `system` was composed for: a step with nothing loaded since keeps it.
  readonly #initiallyLoaded: LoadedPlugins.LoadedPlugins
  readonly system: string

  constructor(deps: TurnDeps, options: TurnOptions) {
    this.#deps = deps
    this.#options = options
    this.#view = Access.view(deps.catalog, options.user?.capabilities)
    this.#did = options.user?.did ?? "did:plugboard:anonymous"
    const fromHistory =
      options.messages === undefined ? LoadedPlugins.empty : loadedFromMessages(options.messages)
    this.#loaded =
      options.loadedPlugins === undefined
        ? fromHistory
        : LoadedPlugins.union(fromHistory, LoadedPlugins.fromUnknown(options.loadedPlugins))
    this.#fixStep()
    this.#initiallyLoaded = this.#loaded
    this.system = this.#systemFor(this.#loaded)
  }

  get tools(): ToolSet {
    // The SDK's ToolSet type is that of the app's `ai` (6 or 7); the objects are what `tool()` builds.
    return this.#record as unknown as ToolSet
  }

  get loadedPlugins(): ReadonlyArray<string> {
    return this.#loaded
  }

  get offered(): ReadonlyArray<string> {
    return this.#offeredNames
  }

  /** Fixes the next step's offer and system prompt (an arrow: the SDK calls it unbound). */
  readonly prepareStep = async (): Promise<StepSettings> => {
    this.#fixStep()
    this.#stepLength = undefined
    if (this.#loaded === this.#initiallyLoaded) return NO_CHANGE
    const system = this.#systemFor(this.#loaded)
    return system === this.system ? NO_CHANGE : { system, instructions: system }
  }

  /** Answers a call to a tool not offered with core's refusal (an arrow: the SDK calls it unbound). */
  readonly repairToolCall = async <C extends RepairedCall>({
    toolCall,
    error
  }: RepairOptions<C>): Promise<C | null> => {
    if (!NoSuchToolError.isInstance(error) || typeof toolCall.toolName !== "string") return null
    const name = toolCall.toolName
    // Any arguments: the call is answered without running anything.
    defineRefused(this.#record, name, {
      inputSchema: anyInput,
      execute: Turn.#executeOf(this, name)
    })
    return toolCall
  }

  /** The gate's offer becomes the current one, and the record lists it. */
  #fixStep(): void {
    if (this.#offeredFor !== this.#loaded) {
      this.#offered = Offer.offer(this.#deps.catalog, this.#loaded, [], this.#view)
      this.#offeredNames = this.#offered.map((t) => t.name)
      this.#offeredFor = this.#loaded
    }
    this.#list(this.#offered)
  }

  /** Lists `offer` in the record: its new tail appended (a load appends), or all of it anew. */
  #list(offer: ReadonlyArray<Offer.OfferedTool>): void {
    const before = this.#listed
    if (offer === before) return
    const appends = before.length <= offer.length && before.every((t, i) => offer[i] === t)
    if (!appends) for (const name of Object.keys(this.#record)) delete this.#record[name]
    for (let i = appends ? before.length : 0; i < offer.length; i++) {
      appendOffered(this.#record, offer[i]!.name, this.#toolFor(offer[i]!))
    }
    this.#listed = offer
  }

  #toolFor(spec: Offer.OfferedTool): SdkTool {
    const name = spec.name
    const tool: SdkTool = {
      description: spec.description,
      inputSchema: schemaOf(spec),
      execute: Turn.#executeOf(this, name)
    }
    // Core's rule (`Approval.needsApproval`) through the SDK's own mechanism: the SDK stops the
    // loop with a `tool-approval-request` and runs `execute` only once the app approved.
    const target = ToolCall.catalogTool(this.#deps.catalog, spec)
    const waits =
      target !== undefined &&
      Approval.needsApproval(
        {
          plugin: target.plugin,
          name: target.name,
          requiresApproval: target.requiresApproval,
          destructiveHint: target.destructiveHint
        },
        this.#deps.approval ?? Approval.NONE
      )
    return waits ? { ...tool, needsApproval: true } : tool
  }

  // The `execute` of `name`: returned by a function rather than written in an object literal,
  // where a transpiler that keeps function names (tsx) would name each one as it is made.
  static #executeOf(turn: Turn, name: string): SdkTool["execute"] {
    return (input, sdk) => turn.#run(name, input, sdk)
  }

  #systemFor(loaded: LoadedPlugins.LoadedPlugins): string {
    const { catalog } = this.#deps
    return SystemPrompt.compose({
      basePrompt: this.#options.system ?? "",
      catalog,
      loadedPlugins: loaded,
      view: this.#view
    })
  }

  /**
   * A call of a later step than the last one seen: the gate's offer becomes what that step's model
   * call was offered (every load before it). Only needed when `prepareStep` is not wired.
   */
  #observeStep(sdk: SdkToolOptions): void {
    const length = sdk.messages?.length
    if (length === undefined) return
    if (this.#stepLength !== undefined && length > this.#stepLength) this.#fixStep()
    if (this.#stepLength === undefined || length > this.#stepLength) this.#stepLength = length
  }

  #notify<E>(name: keyof TurnCallbacks, callback: ((event: E) => void) | undefined, event: E): void {
    if (callback === undefined) return
    try {
      callback(event)
    } catch (error) {
      this.#deps.logger.warn(`ai-sdk: the turn's ${name} callback threw; ignored`, {
        error: describe(error)
      })
    }
  }

  /** Decides and runs one call; resolves with the answer's text or rejects with `ToolAnswerError`. */
  async #run(name: string, args: unknown, sdk: SdkToolOptions): Promise<string> {
    this.#observeStep(sdk)
    const { catalog } = this.#deps
    const options = this.#options
    const step: ToolCall.Step = {
      catalog,
      offered: this.#offered,
      loaded: this.#loaded,
      view: this.#view,
      pending: options.pending
    }
    let plan: ToolCall.Plan
    // The meta-tools are always offered (core's prefix); their answers need the turn's state.
    if (name === MetaTools.LOAD_CAPABILITY) {
      // Loads apply at once, in the order they run: a later load of the same step sees them.
      const load = MetaTools.loadCapability(catalog, this.#loaded, args, [], this.#view, options.pending)
      plan = ToolCall.plan(step, { name, args }, { load })
      if (Either.isRight(load) && load.right.newlyLoaded.length > 0) {
        this.#loaded = load.right.loadedPlugins
        // Listed for the next model call at once; the gate moves at the next step.
        this.#list(Offer.offer(catalog, this.#loaded, [], this.#view))
        this.#notify("onPluginsLoaded", options.onPluginsLoaded, {
          toolCallId: sdk.toolCallId,
          names: load.right.newlyLoaded,
          loadedPlugins: this.#loaded
        })
      }
    } else if (name === MetaTools.LIST_CAPABILITIES) {
      const ranked = await this.#rankOf(args)
      plan = ToolCall.plan(step, { name, args }, { loadedAfter: this.#loaded, ranked })
    } else {
      plan = ToolCall.plan(step, { name, args })
    }
    const call: ToolCallEvent = {
      toolCallId: sdk.toolCallId,
      toolName: name,
      args,
      // This door offers no run_code, so the gate never plans a program here.
      plugin: plan._tag === "Program" ? undefined : plan.plugin
    }
    this.#notify("onToolStart", options.onToolStart, call)
    let executed: ToolCall.Executed
    const target = plan._tag === "Run" ? ToolCall.catalogTool(catalog, plan.tool) : undefined
    if (plan._tag === "Answer") {
      executed = { answer: plan.answer }
    } else if (target === undefined) {
      executed = { answer: ToolCall.noHandler(name) }
    } else {
      this.#failures ??= new Map()
      const previous = this.#failures.get(name) ?? 0
      const context = this.#contextFor(call, sdk)
      executed = await ToolCall.execute(name, target.tool.input, target.tool.handler, args, previous, context)
      this.#failures.set(name, ToolCall.countFailure(previous, executed.answer.outcome))
    }
    this.#notify("onToolEnd", options.onToolEnd, {
      ...call,
      outcome: executed.answer.outcome,
      text: executed.answer.content,
      output: executed.output
    })
    const error = fromAnswer(name, executed.answer)
    if (error !== undefined) throw error
    return executed.answer.content
  }

  async #rankOf(args: unknown): Promise<ToolCall.Ranked | undefined> {
    const query = (args as { query?: unknown } | null | undefined)?.query
    const rank = this.#deps.rank
    if (rank === undefined || typeof query !== "string" || query.trim() === "") return undefined
    try {
      return await rank(query)
    } catch (error) {
      this.#deps.logger.warn("list_capabilities: the embedder's ranking failed; ranking lexically", {
        error: describe(error)
      })
      return undefined
    }
  }

  #contextFor(call: ToolCallEvent, sdk: SdkToolOptions): RuntimeContext {
    const options = this.#options
    const signal =
      sdk.abortSignal !== undefined && options.signal !== undefined
        ? AbortSignal.any([sdk.abortSignal, options.signal])
        : (sdk.abortSignal ?? options.signal)
    const context = makeRuntimeContext({
      state: {
        ...GraphState.initial({ did: this.#did, client: "portal" }),
        // The SDK's messages of this step: what a handler reads as `history.messages`.
        messages: (sdk.messages ?? []) as ReadonlyArray<GraphState.StateMessage>,
        loadedPlugins: this.#loaded
      },
      sessionId: options.sessionId ?? "ai-sdk",
      did: this.#did,
      capabilities: options.user?.capabilities,
      shared: this.#deps.shared,
      logger: this.#deps.logger,
      ...(signal === undefined ? {} : { signal })
    })
    return {
      ...context,
      toolCall: {
        id: call.toolCallId,
        name: call.toolName,
        progress: (progress: ToolProgress) =>
          this.#notify("onToolProgress", options.onToolProgress, { ...call, progress }),
        ...(options.onToolQuestion === undefined
          ? {}
          : { ask: (question: Wait.InputQuestion) => this.#askUser(call, question) })
      }
    }
  }

  /** The app's answer to a tool's question (`onToolQuestion`); a throw declines it, logged. */
  async #askUser(call: ToolCallEvent, question: Wait.InputQuestion): Promise<Wait.InputAnswer> {
    try {
      return await this.#options.onToolQuestion!({ ...call, question })
    } catch (error) {
      this.#deps.logger.warn("onToolQuestion failed: the question is declined", {
        toolName: call.toolName,
        error: describe(error)
      })
      return { _tag: "declined" }
    }
  }
}

/** Builds a turn (see the module doc). */
export const makeTurn = (deps: TurnDeps, options: TurnOptions = {}): CatalogTurn => new Turn(deps, options)
