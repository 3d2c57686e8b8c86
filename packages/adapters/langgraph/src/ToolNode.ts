/**
 * The agent loop's tool step: dispatches the tool calls of the last model answer. Core decides what
 * was offered (`Offer.offer`), which calls run and what the others are told (`ToolCall`: the gate,
 * the meta-tools, the arguments' one retry); this step translates those decisions into
 * ToolMessages, a state update (the plugins it loaded) and `tool_call` events.
 *
 * The turn's count of invalid arguments per tool (`ToolCall.countFailure`) is read back from the
 * turn's ToolMessages (their `artifact`: the messages after the latest human message), so it
 * survives a checkpoint round-trip and needs no extra state channel. */
import {
  type AIMessage,
  type BaseMessage,
  isAIMessage,
  isHumanMessage,
  ToolMessage
} from "@langchain/core/messages"
import type { LangGraphRunnableConfig } from "@langchain/langgraph"
import {
  type Approval,
  Connect,
  describe,
  LoadedPlugins,
  MetaTools,
  Offer,
  ResultPages,
  type RuntimeContext,
  ToolCall,
  ToolOutput,
  type ToolProgress,
  type Wait
} from "@plugboard/core"
import { Effect, Either } from "effect"
import { type ApprovalOption, gate, requestFor, WaitNeeded } from "./Approvals.js"
import { runProgram } from "./CodeRun.js"
import type { Emitter } from "./Events.js"
import { keptResults } from "./KeptResults.js"
import type { DynamicTool } from "./RequestScope.js"
import { type AgentRuntime, offerFor } from "./Runtime.js"
import type { AgentStateValue } from "./State.js"
import { guardToolCall } from "./TurnGuard.js"

/** What a ToolMessage's `artifact` records about the call (never sent to the model): core's. */
export type Outcome = ToolCall.Outcome

/** The `artifact` of every ToolMessage this node writes. */
export interface ToolArtifact {
  readonly plugboard: {
    readonly outcome: Outcome
    readonly plugin?: string | undefined
    /** The whole answer, when the content is its first page (`KeptResults.ts`). */
    readonly result?: string | undefined
  }
}

const outcomeOf = (m: BaseMessage): Outcome | undefined =>
  ToolMessage.isInstance(m) ? (m.artifact as ToolArtifact | undefined)?.plugboard?.outcome : undefined

/** Consecutive invalid-input failures per tool in the current turn, read from the messages. */
const failuresInTurn = (messages: ReadonlyArray<BaseMessage>): Map<string, number> => {
  let start = messages.length
  while (start > 0 && !isHumanMessage(messages[start - 1]!)) start--
  const counts = new Map<string, number>()
  for (let i = start; i < messages.length; i++) {
    const m = messages[i]!
    const outcome = outcomeOf(m)
    if (outcome === undefined || m.name === undefined) continue
    counts.set(m.name, ToolCall.countFailure(counts.get(m.name) ?? 0, outcome))
  }
  return counts
}

/**
 * A handler's `ToolOutput` as ToolMessage content (its text, or the `excerpt` when it was cut:
 * `ResultPages`). Text-only answers stay one string, as every
 * other answer is. With images, the content is the text (every block rendered, images named)
 * followed by the images as LangChain's standard image blocks: Anthropic's tool results carry
 * them; OpenAI's tool messages keep text only, and the text already says an image was there.
 */
export const toolOutputContent = (
  output: ToolOutput.ToolOutput,
  excerpt?: string | undefined
): ToolMessage["content"] => {
  const text = excerpt ?? ToolOutput.toText(output)
  const images = output.content.filter((b) => b.type === "image")
  if (images.length === 0) return text
  return [
    { type: "text", text },
    ...images.map((b) => ({ type: "image" as const, mimeType: b.mimeType, data: b.data }))
  ] as ToolMessage["content"]
}

/** Reports of a tool's progress, checked: a handler's bad report is dropped, never thrown. */
const progressOf = (p: unknown): ToolProgress | undefined => {
  if (typeof p !== "object" || p === null) return undefined
  const { progress, total, message } = p as Record<string, unknown>
  if (typeof progress !== "number" || !Number.isFinite(progress)) return undefined
  return {
    progress,
    ...(typeof total === "number" && Number.isFinite(total) ? { total } : {}),
    ...(typeof message === "string" ? { message: message.slice(0, 500) } : {})
  }
}

/** One call as decided: a ready answer, a handler to run, or a program (`run_code`) to run. */
export interface Planned {
  readonly call: { readonly id: string; readonly name: string; readonly args: Record<string, unknown> }
  readonly plugin?: string | undefined
  readonly answer?: { readonly content: string; readonly outcome: Outcome }
  /** Runs the call with the context of that one call (its `toolCall` reports progress). */
  readonly run?: (context: RuntimeContext) => Promise<unknown>
  /** The program of a `run_code` call (code mode: `CodeRun.ts`). */
  readonly program?: string | undefined
  /** The plugin tool `run` runs, as core's approval rule sees it (`Approvals.ts`). */
  readonly approval?: Approval.ToolRef | undefined
}

/** What performing one call came to: the ToolMessage's content, the text the events carry, the outcome. */
export interface Performed {
  readonly content: ToolMessage["content"]
  readonly output: string
  readonly outcome: Outcome
  /** The whole answer, when `content` is its first page (`ResultPages`). */
  readonly kept?: string | undefined
}

/** The last AI message, whose tool calls this node dispatches. */
const lastAI = (messages: ReadonlyArray<BaseMessage>): AIMessage | undefined => {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!
    if (isAIMessage(m)) return m
  }
  return undefined
}

/**
 * The embedder's ranking of each `list_capabilities` call's query in the batch (`rt.ranking`,
 * docs/benchmarks.md#routing-quality), by call index. A call without a text query, or whose ranking fails
 * (logged), is left out and ranks lexically: a model failure must not fail the listing.
 */
const rankQueries = async (
  rt: AgentRuntime,
  calls: ReadonlyArray<{ readonly name?: unknown; readonly args?: unknown }>
): Promise<Map<number, ReadonlyArray<{ readonly name: string; readonly score: number }>>> => {
  const out = new Map<number, ReadonlyArray<{ readonly name: string; readonly score: number }>>()
  const ranking = rt.ranking
  // A lexical ranking is the one the listing makes itself.
  if (ranking === undefined || ranking.kind === "lexical") return out
  await Promise.all(
    calls.map(async (c, i) => {
      const query = (c.args as { query?: unknown } | undefined)?.query
      if (c.name !== MetaTools.LIST_CAPABILITIES || typeof query !== "string" || query.trim() === "") return
      const ranked = await Effect.runPromise(Effect.either(ranking.rank(query)))
      if (Either.isRight(ranked)) out.set(i, ranked.right)
      else
        rt.logger.warn("list_capabilities: the embedder's ranking failed; ranking lexically", {
          error: ranked.left.message
        })
    })
  )
  return out
}

/**
 * Initialises the sub-agents the batch's loads made offerable (`Promise.allSettled` semantics,
 * memoised per request) and returns what removes, from a load's answer, the sub-agents whose
 * init failed: those will not be offered, so the answer must not list them.
 */
const leaveOutFailedInits = async (
  rt: AgentRuntime,
  context: ReturnType<AgentRuntime["context"]>,
  loaded: LoadedPlugins.LoadedPlugins,
  after: LoadedPlugins.LoadedPlugins,
  ready: ReadonlyArray<DynamicTool>
): Promise<(result: MetaTools.LoadCapabilityResult) => MetaTools.LoadCapabilityResult> => {
  const readyAfter = after === loaded ? ready : await rt.scope.init(context, after)
  const readyNames = new Set(readyAfter.map((t) => t.offered.name))
  const failed = new Set(
    rt.scope.tools
      .filter((t) => t.kind === "sub-agent" && !readyNames.has(t.offered.name))
      .map((t) => t.offered.name)
  )
  if (failed.size === 0) return (result) => result
  return (result) => ({
    ...result,
    results: result.results.map((r) =>
      r.status === "loaded" ? { ...r, tools: r.tools.filter((t) => !failed.has(t.name)) } : r
    )
  })
}

/** The resumed wait, when it was a program's (its request carries the program's journal). */
const programResume = (resume: ApprovalOption["resume"]) =>
  resume?.request._tag === "approval" && resume.request.program !== undefined
    ? { request: resume.request, answer: resume.answer }
    : undefined

/** What the `run_code` call's event says when its program stopped to wait. */
const waitingText = (request: typeof Wait.ApprovalRequest.Type): string =>
  `Waiting: the program's call to '${request.tool}' needs the user's approval; it runs again once they answer.`

/** What a tool step adds to the state: its ToolMessages and the plugins its loads added. */
export interface ToolStepUpdate {
  readonly messages: Array<BaseMessage>
  readonly loadedPlugins: ReadonlyArray<string>
}

/** Builds the tool step for one request. */
export const makeToolNode = (rt: AgentRuntime, emitter: Emitter) => {
  // The answer of the wait this turn resumes serves its first tool step only (`Approvals.ts`).
  let resume = rt.request.approval?.resume
  return async (state: AgentStateValue, config?: LangGraphRunnableConfig): Promise<ToolStepUpdate> => {
    const approval =
      rt.request.approval === undefined ? undefined : { operator: rt.request.approval.operator, resume }
    resume = undefined
    const ask = rt.request.approval?.ask
    const writer = config?.writer
    const ai = lastAI(state.messages)
    const calls = ai?.tool_calls ?? []
    const ready = await rt.ready(state)
    const loaded = LoadedPlugins.fromUnknown(state.loadedPlugins)
    const offered = offerFor(rt, loaded, ready, state)
    const clientByName = new Map((rt.client?.tools ?? []).map((t) => [t.name, t] as const))
    const dynamicByName = new Map<string, DynamicTool>()
    for (const t of ready) if (!dynamicByName.has(t.offered.name)) dynamicByName.set(t.offered.name, t)
    const step: ToolCall.Step = {
      catalog: rt.catalog,
      offered,
      loaded,
      // What the gate knows beyond the offer: the ready tools, and the request tools and sub-agents
      // of plugins not loaded (never initialised), so a call to one is told which plugin to load.
      // Every request tool and sub-agent counts for a load (an `always` plugin with an on-demand
      // one is loaded).
      requestTools: [
        ...ready,
        ...rt.scope.tools.filter((t) => Offer.requestTools(rt.catalog, loaded, [t], rt.view).length === 0)
      ],
      view: rt.view,
      pending: rt.request.pending,
      keptResult: keptResults(state.messages),
      resultMaxChars: rt.request.resultMaxChars
    }
    const context = rt.context(state)
    const loads = ToolCall.applyLoads({ ...step, requestTools: rt.scope.tools }, calls)
    // The loaded plugins' sub-agents initialise now, so that each load's answer lists exactly the
    // tools the next model call will offer: a sub-agent whose init failed is left out.
    const withoutFailedInits = await leaveOutFailedInits(rt, context, loaded, loads.loaded, ready)
    const rankings = await rankQueries(rt, calls)
    const failures = failuresInTurn(state.messages)

    /** A decided call as something to perform (the handler found, its arguments checked). */
    const planned = (call: Planned["call"], decided: ToolCall.Plan): Planned => {
      if (decided._tag === "Answer") return { call, plugin: decided.plugin, answer: decided.answer }
      if (decided._tag === "Program") return { call, program: decided.code }
      const tool = decided.tool
      const plugin = decided.plugin
      const client = clientByName.get(tool.name)
      if (client !== undefined && client.offered === tool && rt.client !== undefined) {
        // The client validates its own arguments: its JSON Schema is its contract, not ours.
        const bridge = rt.client
        const args = decided.args as Record<string, unknown>
        return { call, run: () => bridge.call({ callId: call.id, kind: client.kind, name: tool.name, args }) }
      }
      const target = ToolCall.catalogTool(rt.catalog, tool)
      const dynamic = target === undefined ? dynamicByName.get(tool.name) : undefined
      const input = target?.tool.input ?? dynamic?.input
      const handler = target?.tool.handler ?? dynamic?.run
      if (input === undefined || handler === undefined) {
        return { call, plugin, answer: ToolCall.noHandler(tool.name) }
      }
      const previous = failures.get(tool.name) ?? 0
      const decoded = ToolCall.decodeArguments(tool.name, input, decided.args, previous)
      if (Either.isLeft(decoded)) {
        failures.set(tool.name, ToolCall.countFailure(previous, decoded.left.outcome))
        return { call, plugin, answer: decoded.left }
      }
      failures.set(tool.name, 0)
      const owner = target?.plugin ?? plugin
      return {
        call,
        plugin,
        run: async (callContext) => handler(decoded.right as never, callContext),
        ...(owner === undefined
          ? {}
          : {
              approval: {
                plugin: owner,
                name: tool.name,
                requiresApproval: target?.requiresApproval,
                destructiveHint: target?.destructiveHint
              }
            })
      }
    }

    /**
     * Performs one call between its `isRunning` and `done` events. A call a program made
     * (`parent`: the `run_code` call's event) is nested under it, and its answer goes to the
     * program whole: only what the program returns enters the thread.
     */
    const perform = async (p: Planned, parent?: string): Promise<Performed> => {
      const eventId = emitter.toolStarted(p.call.name, p.call.args, writer, parent)
      const performed = await performCall(p, eventId, parent)
      emitter.toolDone(
        eventId,
        p.call.name,
        p.call.args,
        performed.output,
        !ToolCall.isSuccess(performed.outcome),
        writer
      )
      return performed
    }

    const performCall = async (
      p: Planned,
      eventId: string,
      parent: string | undefined
    ): Promise<Performed> => {
      if (p.program !== undefined) {
        const ran = await runProgram(rt, step, p.program, {
          parentEventId: eventId,
          signal: context.signal,
          call: async (call, decided, approved) => {
            const nested = planned(call, decided)
            const asked =
              approved || approval === undefined ? undefined : requestFor(approval.operator, nested)
            return asked === undefined ? perform(nested, eventId) : { waits: asked }
          },
          waits:
            approval === undefined
              ? undefined
              : { alone: calls.length === 1, resume: programResume(approval.resume) }
        })
        if (ran.waits !== undefined) {
          // The program stopped to wait: its step ends here, unanswered, and the turn waits.
          emitter.toolDone(eventId, p.call.name, p.call.args, waitingText(ran.waits), false, writer)
          throw new WaitNeeded(p.call.id, ran.waits)
        }
        return { content: ran.text, output: ran.text, outcome: ran.outcome }
      }
      if (p.run === undefined)
        return { content: p.answer!.content, output: p.answer!.content, outcome: p.answer!.outcome }
      const callContext: RuntimeContext = {
        ...context,
        toolCall: {
          id: p.call.id,
          name: p.call.name,
          progress: (reported) => {
            const checked = progressOf(reported)
            if (checked !== undefined) emitter.toolProgress(eventId, checked, writer)
          },
          ...(ask === undefined || p.approval === undefined
            ? {}
            : {
                ask: (question: Wait.InputQuestion) =>
                  ask({
                    plugin: p.approval!.plugin,
                    tool: p.call.name,
                    args: p.call.args,
                    question,
                    signal: context.signal
                  })
              })
        }
      }
      try {
        const result = ToolCall.result(await p.run(callContext))
        // A tool that reports its own failure (an MCP `isError`) is an error answer, not a throw.
        // A long answer enters the thread as its first page; the whole is kept in the artifact.
        const cut =
          parent === undefined
            ? ResultPages.cut(p.call.id || eventId, result.text, rt.request.resultMaxChars)
            : undefined
        const output = cut?.excerpt ?? result.text
        return {
          content: result.output === undefined ? output : toolOutputContent(result.output, cut?.excerpt),
          output,
          outcome: result.outcome,
          kept: cut?.full
        }
      } catch (error) {
        rt.logger.warn("tool handler failed", { tool: p.call.name, error: describe(error) })
        const failed = ToolCall.handlerFailed(p.call.name, error)
        return { content: failed.content, output: failed.content, outcome: failed.outcome }
      }
    }

    const asPlanned: Array<Planned> = calls.map((c, i) => {
      // Providers always name a call; core's gate refuses a malformed name as an unknown tool.
      const call = {
        id: c.id ?? "",
        name: typeof c.name === "string" ? c.name : "",
        args: (c.args ?? {}) as Record<string, unknown>
      }
      // Every call counts, offered or not: a model repeating a refused call is stopped too.
      const told = guardToolCall(rt, call.name, call.args)
      if (told !== undefined) return { call, answer: { content: told, outcome: "repeated" } }
      const load = loads.byCall.get(i)
      const decided = ToolCall.plan(step, c, {
        load: load === undefined ? undefined : Either.map(load, withoutFailedInits),
        loadedAfter: loads.loaded,
        ranked: rankings.get(i)
      })
      return planned(call, decided)
    })
    // A load of a plugin its user has not connected stops the batch before any call runs, when
    // the turn can wait (a `connect` wait, docs/waiting.md#connect-waits): the host resumes it
    // once the connection is made. A turn resuming that wait answers the load with the link.
    if (approval !== undefined && rt.request.approval?.connect === true) {
      const resumed = approval.resume?.request._tag === "connect" ? approval.resume.request.plugin : undefined
      const results = [...loads.byCall].flatMap(([i, r]) =>
        Either.isRight(r) ? [[i, r.right.results] as const] : []
      )
      const waits = Connect.waitOf(results, step.pending ?? Connect.NONE, resumed)
      if (waits !== undefined) throw new WaitNeeded(asPlanned[waits.call]!.call.id, waits.request)
    }
    // A call that needs approval stops the batch before any call runs (`WaitNeeded`), unless
    // this turn resumes its wait.
    const gated = gate(approval, asPlanned)
    const plans = asPlanned.map((p, i): Planned => {
      const decision = gated[i]!
      return decision._tag === "run"
        ? p
        : { call: p.call, plugin: p.plugin, answer: { content: decision.content, outcome: "refused" } }
    })

    const messages = await Promise.all(
      plans.map(async (p) => {
        const { content, outcome, kept } = await perform(p)
        const isError = !ToolCall.isSuccess(outcome)
        return new ToolMessage({
          content,
          tool_call_id: p.call.id,
          name: p.call.name,
          status: isError ? "error" : "success",
          artifact: {
            plugboard: { outcome, plugin: p.plugin, ...(kept === undefined ? {} : { result: kept }) }
          } satisfies ToolArtifact
        })
      })
    )
    return { messages, loadedPlugins: loads.newlyLoaded }
  }
}
