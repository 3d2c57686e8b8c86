/**
 * One model step's tool calls, decided (docs/spec/pipeline.md#tool-calls): which of them run, and
 * what the model is told instead for the others (core's refusal, a meta-tool's answer, an argument
 * error). Every front door runs its calls through here: the LangGraph loop's tool step, the AI SDK
 * adapter, the MCP gateway. What a door adds is only its own shapes (messages, tool objects,
 * results) and running the handler.
 *
 * A step is decided in two parts, because a load changes what the rest of the step is told:
 * - `applyLoads` runs every `load_capability` of the step in call order, so that loads within one
 *   step see each other (a second load of a name is a no-op). Their tools are offered from the
 *   next model call on: the step's own offer is fixed.
 * - `plan` decides each call against the step's offer (`Offer.gate`): an answer, or a tool to run.
 *   A tool to run has its arguments checked with `decodeArguments`, whose retry rule is below.
 *
 * "Retried once", precisely: within one turn, a tool whose arguments fail its schema gets one more
 * chance. The first invalid call is answered with the validation error and an invitation to call
 * again; if the next call of that tool in the turn is invalid too, that failure is final, and every
 * later call of that tool in the turn is refused without validating or running it. A valid call
 * resets the count (the failures must be consecutive). `countFailure` is that count's rule; where
 * the count lives (ToolMessage artifacts, an object per turn) is the door's.
 */
import { Data, Either, ParseResult, Schema } from "effect"
import * as Access from "./Access.js"
import * as CallTool from "./CallTool.js"
import * as CodeMode from "./CodeMode.js"
import type * as Connect from "./Connect.js"
import { describe } from "./Describe.js"
import type { CatalogTool } from "./internal/catalog/entry.js"
import type { Catalog } from "./internal/catalog/model.js"
import type { OfferedTool, RequestTool } from "./internal/offered.js"
import type * as LoadedPlugins from "./LoadedPlugins.js"
import * as MetaTools from "./MetaTools.js"
import * as Offer from "./Offer.js"
import * as ResultPages from "./ResultPages.js"
import type { RuntimeContext } from "./RuntimeContext.js"
import * as ToolOutput from "./ToolOutput.js"

/** How a call was answered: recorded beside the answer (never shown to the model). */
export type Outcome =
  | "ok"
  | "meta"
  | "meta_error"
  | "refused"
  | "invalid_input"
  | "invalid_input_final"
  | "blocked_after_invalid_input"
  | "handler_error"
  | "tool_error"
  /** A call repeated too often in the turn: not run, the model was told (`TurnBounds`). */
  | "repeated"

/** True for the outcomes the model sees as a success (every other one is an error answer). */
export const isSuccess = (outcome: Outcome): boolean => outcome === "ok" || outcome === "meta"

/** What the model is told in place of running a call. */
export interface Answer {
  readonly content: string
  readonly outcome: Outcome
}

/** One tool call as a model made it: its name may be anything the provider passed on. */
export interface Call {
  readonly name: unknown
  readonly args: unknown
}

/** The decision for one call. */
export type Plan = Data.TaggedEnum<{
  /** Answer the model with `answer`; nothing runs. `plugin` is the tool's, when it has one. */
  Answer: { readonly answer: Answer; readonly plugin?: string | undefined }
  /**
   * Run `tool` (offered on this step, not a meta-tool) with `args`: check them, then its handler.
   * `args` are the call's own, or for a `call_tool` call the arguments it passes on.
   */
  Run: { readonly tool: OfferedTool; readonly plugin?: string | undefined; readonly args: unknown }
  /**
   * Run `code` (a `run_code` call, code mode: `CodeMode`) in the door's sandbox; each call the
   * program makes is planned as a direct call against the same step (`planProgramCall`). Only a
   * door that offers `run_code` gets one: the gate refuses it everywhere else.
   */
  Program: { readonly code: string }
}>

/** Constructors and matchers of `Plan`. */
export const Plan = Data.taggedEnum<Plan>()

// `Plan`'s constructors are reached through a Proxy that makes a function on every access: every
// call of every step is planned, so the module keeps its own.
const answerPlan = Data.tagged<Extract<Plan, { _tag: "Answer" }>>("Answer")
const runPlan = Data.tagged<Extract<Plan, { _tag: "Run" }>>("Run")
const programPlan = Data.tagged<Extract<Plan, { _tag: "Program" }>>("Program")

/** A ranking computed beforehand for a `list_capabilities` query (`SemanticIndex`). */
export type Ranked = ReadonlyArray<{ readonly name: string; readonly score: number }>

/** The step's loads: each `load_capability` call's result by call index, and the state after. */
export interface Loads {
  readonly byCall: ReadonlyMap<number, ReturnType<typeof MetaTools.loadCapability>>
  /** `loadedPlugins` after every load of the step. */
  readonly loaded: LoadedPlugins.LoadedPlugins
  /** What the step's loads added, in order. */
  readonly newlyLoaded: ReadonlyArray<string>
}

/** What a step is decided against. */
export interface Step {
  readonly catalog: Catalog
  /** What the model was offered on the call that made these tool calls (`Offer.offer`). */
  readonly offered: ReadonlyArray<OfferedTool>
  /** The thread's `loadedPlugins` as the step began. */
  readonly loaded: LoadedPlugins.LoadedPlugins
  /**
   * Every per-request tool and sub-agent the request knows, offered or not: a call to one that is
   * not offered is told which plugin to load, and a load of its plugin lists it.
   */
  readonly requestTools?: ReadonlyArray<RequestTool> | undefined
  /** The user's view (`Access.view` of their grants; default: no grants). */
  readonly view?: Access.View | undefined
  /** The plugins the user must connect an account for first (`Connect`; default: none). */
  readonly pending?: Connect.Pending | undefined
  /**
   * The thread's kept results by handle, for `read_result` (`ResultPages`): what a door keeps
   * beside its messages. A door that keeps none leaves it out, and never offers `read_result`.
   */
  readonly keptResult?: ((handle: string) => string | undefined) | undefined
  /** The bound results were cut with (`ResultPages.cut`), so pages are read the same size. */
  readonly resultMaxChars?: number | undefined
}

const viewOf = (step: Step): Access.View => step.view ?? Access.view(step.catalog)

/** Runs the step's `load_capability` calls in call order (see the module doc). */
export const applyLoads = (step: Step, calls: ReadonlyArray<Call>): Loads => {
  const view = viewOf(step)
  const byCall = new Map<number, ReturnType<typeof MetaTools.loadCapability>>()
  let loaded = step.loaded
  const newlyLoaded: Array<string> = []
  calls.forEach((c, i) => {
    if (c.name !== MetaTools.LOAD_CAPABILITY) return
    const result = MetaTools.loadCapability(
      step.catalog,
      loaded,
      c.args,
      step.requestTools ?? [],
      view,
      step.pending
    )
    byCall.set(i, result)
    if (Either.isRight(result)) {
      loaded = result.right.loadedPlugins
      newlyLoaded.push(...result.right.newlyLoaded)
    }
  })
  return { byCall, loaded, newlyLoaded }
}

/** A meta-tool's answer: core's text; bad input or a name that failed to load is an error. */
export const metaAnswer = (
  result: MetaTools.ListCapabilitiesResult | MetaTools.LoadCapabilityResult | MetaTools.MetaToolInputError
): Answer => {
  const failed =
    result instanceof MetaTools.MetaToolInputError ||
    (result.tool === MetaTools.LOAD_CAPABILITY && result.results.some((r) => r.status === "error"))
  return { content: MetaTools.formatToolMessage(result), outcome: failed ? "meta_error" : "meta" }
}

/** Options of `plan` for one call. */
export interface PlanOptions {
  /** This call's `load_capability` result, from `applyLoads` (possibly adjusted by the door). */
  readonly load?: ReturnType<typeof MetaTools.loadCapability> | undefined
  /** The step's `loadedPlugins` after its loads (`Loads.loaded`): what a listing reports. */
  readonly loadedAfter?: LoadedPlugins.LoadedPlugins | undefined
  /** The query's ranking computed beforehand, for a `list_capabilities` call. */
  readonly ranked?: Ranked | undefined
}

/**
 * Decides one call against the step's offer: a call that was not offered never runs (core's
 * `Offer.gate` says what the model is told), a meta-tool is answered here, anything else offered
 * is to be run.
 */
export const plan = (step: Step, call: Call, options: PlanOptions = {}): Plan => {
  const view = viewOf(step)
  const decision = Offer.gate(step.catalog, step.offered, call.name, step.requestTools ?? [], view)
  if (decision._tag !== "Offered") {
    return answerPlan({
      answer: { content: decision.message, outcome: "refused" },
      plugin: "plugin" in decision ? decision.plugin : undefined
    })
  }
  const tool = decision.tool
  if (tool.kind === "meta") {
    if (call.name === MetaTools.LOAD_CAPABILITY) {
      const load =
        options.load ??
        MetaTools.loadCapability(
          step.catalog,
          step.loaded,
          call.args,
          step.requestTools ?? [],
          view,
          step.pending
        )
      // A door with call_tool answers a load with the schemas its model needs to call through it.
      if (Either.isRight(load) && CallTool.offersCallTool(step.offered)) {
        return answerPlan({
          answer: { ...metaAnswer(load.right), content: CallTool.loadAnswer(step.catalog, load.right) }
        })
      }
      return answerPlan({ answer: metaAnswer(Either.merge(load)) })
    }
    if (call.name === MetaTools.CALL_TOOL) return planCallTool(step, call.args, view)
    if (call.name === CodeMode.RUN_CODE) {
      const code = CodeMode.decodeInput(call.args)
      return Either.isRight(code)
        ? programPlan({ code: code.right })
        : answerPlan({ answer: { content: code.left, outcome: "meta_error" } })
    }
    if (call.name === ResultPages.READ_RESULT) {
      const page = ResultPages.read(step.keptResult ?? (() => undefined), call.args, step.resultMaxChars)
      return answerPlan({
        answer: Either.isRight(page)
          ? { content: page.right, outcome: "meta" }
          : { content: page.left, outcome: "meta_error" }
      })
    }
    const listing = MetaTools.listCapabilities(
      step.catalog,
      options.loadedAfter ?? step.loaded,
      call.args,
      view,
      options.ranked,
      step.pending
    )
    return answerPlan({ answer: metaAnswer(Either.merge(listing)) })
  }
  return runPlan({ tool, plugin: tool.plugin, args: call.args })
}

/**
 * A `call_tool` call (docs/spec/meta-tools.md#call_tool): the tool it names goes through the same
 * gate as a direct call against the same offer, and runs with the arguments it passes on.
 */
const planCallTool = (step: Step, args: unknown, view: Access.View): Plan => {
  const input = CallTool.decodeInput(args)
  if (Either.isLeft(input)) return answerPlan({ answer: metaAnswer(input.left) })
  const { name, arguments: inner } = input.right
  const decision = Offer.gate(step.catalog, step.offered, name, step.requestTools ?? [], view)
  if (decision._tag !== "Offered") {
    return answerPlan({
      answer: { content: decision.message, outcome: "refused" },
      plugin: "plugin" in decision ? decision.plugin : undefined
    })
  }
  return runPlan({ tool: decision.tool, plugin: decision.tool.plugin, args: inner })
}

/**
 * One call a `run_code` program made, `tools[ref.namespace][ref.name](args)`, decided against the
 * step the program was planned in: the same gate, the same meta-tool exclusion, the same offer.
 * A `Run` is run by the door as a direct call (arguments checked, handler, events); an `Answer`
 * is an error the program's call rejects with. A program can never plan another program.
 */
export const planProgramCall = (
  step: Step,
  ref: { readonly namespace: string; readonly name: string },
  args: unknown
): Plan => {
  const name = CodeMode.target(CodeMode.callables(step.offered), ref)
  if (Either.isLeft(name)) return answerPlan({ answer: { content: name.left, outcome: "refused" } })
  const decided = plan(step, { name: name.right, args })
  // `target` leaves out every meta-tool, so the gate can only answer or run a tool here.
  return decided._tag === "Program"
    ? answerPlan({
        answer: { content: `'${CodeMode.RUN_CODE}' is not callable from a program.`, outcome: "refused" }
      })
    : decided
}

/** The catalog tool an offered plugin tool runs (absent for meta and per-request tools). */
export const catalogTool = (catalog: Catalog, tool: OfferedTool): CatalogTool | undefined =>
  tool.kind === "plugin" ? catalog.toolsByName.get(tool.name) : undefined

/**
 * The count of consecutive invalid-argument failures of a tool after a call answered with
 * `outcome` (see the module doc): invalid input adds one, a blocked call leaves it, anything else
 * resets it.
 */
export const countFailure = (count: number, outcome: Outcome): number =>
  outcome === "invalid_input" || outcome === "invalid_input_final"
    ? count + 1
    : outcome === "blocked_after_invalid_input"
      ? count
      : 0

// One decoder per schema: `Schema.decodeUnknownEither(schema)` compiles the schema's parser anew
// on every call, which costs more than most handlers.
const decoders = new WeakMap<object, (args: unknown) => Either.Either<unknown, ParseResult.ParseError>>()
const decoderOf = <A, I>(schema: Schema.Schema<A, I, never>) => {
  let decode = decoders.get(schema)
  if (decode === undefined) {
    decode = Schema.decodeUnknownEither(schema) as (
      args: unknown
    ) => Either.Either<unknown, ParseResult.ParseError>
    decoders.set(schema, decode)
  }
  return decode as (args: unknown) => Either.Either<A, ParseResult.ParseError>
}

/**
 * A call's arguments checked against the tool's schema, after `previousFailures` consecutive
 * invalid calls of that tool in the turn: the decoded input, or what the model is told (the
 * validation error with one retry, the final failure, or a refusal once the retry failed).
 *
 * `previousFailures` is `undefined` in a door that has no turns (the MCP gateway: its client's
 * agent loop is not ours, and decides its own retries): every invalid call is then answered with
 * the validation error, and none is ever refused for earlier failures.
 */
export const decodeArguments = <A, I>(
  toolName: string,
  schema: Schema.Schema<A, I, never>,
  args: unknown,
  previousFailures: number | undefined
): Either.Either<A, Answer> => {
  if (previousFailures !== undefined && previousFailures >= 2) {
    return Either.left({
      content: `Tool '${toolName}' is not run again in this turn: its arguments failed validation twice. Answer without it, or ask the user for what is missing.`,
      outcome: "blocked_after_invalid_input"
    })
  }
  const decoded = decoderOf(schema)(args)
  if (Either.isRight(decoded)) return Either.right(decoded.right)
  const detail = ParseResult.TreeFormatter.formatErrorSync(decoded.left)
  if (previousFailures === undefined) {
    return Either.left({
      content: `Invalid arguments for tool '${toolName}':\n${detail}\nFix the arguments and call '${toolName}' again.`,
      outcome: "invalid_input"
    })
  }
  return Either.left(
    previousFailures === 0
      ? {
          content: `Invalid arguments for tool '${toolName}':\n${detail}\nFix the arguments and call '${toolName}' again (one retry).`,
          outcome: "invalid_input"
        }
      : {
          content: `Invalid arguments for tool '${toolName}' again:\n${detail}\nThe retry failed; '${toolName}' will not be run again in this turn.`,
          outcome: "invalid_input_final"
        }
  )
}

/** What the model is told when a handler throws. */
export const handlerFailed = (toolName: string, error: unknown): Answer => ({
  content: `Tool '${toolName}' failed: ${describe(error)}`,
  outcome: "handler_error"
})

/** What the model is told when an offered tool has nothing to run it in this runtime. */
export const noHandler = (toolName: string): Answer => ({
  content: `Tool '${toolName}' has no handler in this runtime.`,
  outcome: "handler_error"
})

/** A handler's return value as the model is answered with it. */
export interface Result {
  /** The answer as text (every block rendered, binary content named). */
  readonly text: string
  /** `tool_error` when the tool reports its own failure (a `ToolOutput` with `isError`). */
  readonly outcome: "ok" | "tool_error"
  /** The content blocks, when the handler answered with a `ToolOutput`. */
  readonly output?: ToolOutput.ToolOutput | undefined
}

/** Reads a handler's return value: a `ToolOutput` keeps its blocks, anything else is text. */
export const result = (value: unknown): Result =>
  ToolOutput.isToolOutput(value)
    ? { text: ToolOutput.toText(value), outcome: value.isError ? "tool_error" : "ok", output: value }
    : { text: ToolOutput.valueText(value), outcome: "ok" }

/** What running a tool came to: the model's answer, and the blocks when the tool gave some. */
export interface Executed {
  readonly answer: Answer
  /** The handler's `ToolOutput`, for a door that passes content blocks on as they are. */
  readonly output?: ToolOutput.ToolOutput | undefined
}

/**
 * Runs a tool the step decided to run (`Plan.Run`): its arguments are checked against `schema`
 * after `previousFailures` invalid calls of it in the turn (`decodeArguments`; `undefined` in a door
 * without turns), then `handler` runs with `context`. Never rejects: a handler that throws is
 * answered with `handlerFailed`. Count the turn's failures on with
 * `countFailure(previousFailures, executed.answer.outcome)`.
 */
export const execute = async <A, I>(
  toolName: string,
  schema: Schema.Schema<A, I, never>,
  handler: (input: A, context: RuntimeContext) => unknown,
  args: unknown,
  previousFailures: number | undefined,
  context: RuntimeContext
): Promise<Executed> => {
  const decoded = decodeArguments(toolName, schema, args, previousFailures)
  if (Either.isLeft(decoded)) return { answer: decoded.left }
  try {
    const read = result(await handler(decoded.right, context))
    return { answer: { content: read.text, outcome: read.outcome }, output: read.output }
  } catch (error) {
    context.logger.warn("tool handler failed", {
      tool: toolName,
      error: describe(error)
    })
    return { answer: handlerFailed(toolName, error) }
  }
}
