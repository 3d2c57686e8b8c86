/**
 * The agent loop's model step. Each call is offered exactly core's offer for the thread's current
 * `loadedPlugins` (plus the request's dynamic tools), with core's composed system prompt, so a
 * plugin loaded by `load_capability` is bound on the very next call of the same turn.
 *
 * Plugin middleware wraps the call in catalog order: every `beforeModel`, the model, every
 * `afterModel`. A model error goes to each `onError` in catalog order; the first that returns
 * `{ recover }` turns the error into that answer (and `afterModel` does not run: there was no
 * model result); when none recovers, the error propagates to the caller
 * (docs/spec/pipeline.md#the-model-call). A hook that throws is a plugin bug, not a model error:
 * it propagates as is.
 *
 * `beforeModel` / `afterModel` may return an update of the fields plugins own (core's
 * `GraphState.checkPluginUpdate`): the updates of one call are combined in the order they were
 * returned and written with the call's answer, so they are checkpointed with the thread. Every
 * hook of a call sees the state as the call began. An update a plugin may not write fails the
 * turn with a message naming the plugin and the field, like a hook that throws.
 *
 * The reasoning a provider exposed on the call's answer (`Reasoning.ts`) goes out as one
 * `reasoning` event as soon as the call returns: before the tool step's `tool_call` events, and
 * (`streamTurn` holds the text of a call whose chunks carried reasoning) before its answer text.
 */
import { randomUUID } from "node:crypto"
import type { BaseChatModel } from "@langchain/core/language_models/chat_models"
import {
  AIMessage,
  type BaseMessage,
  isBaseMessage,
  SystemMessage,
  ToolMessage
} from "@langchain/core/messages"
import type { LangGraphRunnableConfig } from "@langchain/langgraph"
import {
  type Catalog,
  type EventSink,
  GraphState,
  LoadedPlugins,
  type ModelCall,
  type ModelResult,
  Preload,
  type RuntimeContext,
  SystemPrompt
} from "@plugboard/core"
import { Either } from "effect"
import { answeredCallIds, unansweredCalls } from "./CutOff.js"
import type { Emitter } from "./Events.js"
import { messageEvent, STREAM_TEXT, streamCall, textOf } from "./ModelStream.js"
import { reasoningOf } from "./Reasoning.js"
import { type AgentRuntime, offerFor } from "./Runtime.js"
import { type AgentStateValue, setMessageId } from "./State.js"
import { toDefinitions } from "./ToolDefinitions.js"
import { guardModelCall, recordModelCall } from "./TurnGuard.js"

const toAnswer = (recovered: unknown): BaseMessage => {
  if (isBaseMessage(recovered)) return recovered
  return new AIMessage({ content: typeof recovered === "string" ? recovered : JSON.stringify(recovered) })
}

const usageOf = (message: BaseMessage) => {
  const u = (message as AIMessage).usage_metadata
  return u === undefined ? undefined : { inputTokens: u.input_tokens, outputTokens: u.output_tokens }
}

/**
 * Runs `hook` of every middleware in catalog order with `input`, checking what each returned;
 * their state updates join `updates`. A plugin's mistake is thrown as an Error naming it.
 */
const runHooks = async (
  middlewares: ReadonlyArray<Catalog.OwnedMiddleware>,
  hook: "beforeModel" | "afterModel",
  input: ModelCall | ModelResult,
  context: RuntimeContext,
  updates: Array<GraphState.PluginStateUpdate>
): Promise<void> => {
  for (const owned of middlewares) {
    const run = owned.middleware[hook] as ((input: never, context: RuntimeContext) => unknown) | undefined
    if (run === undefined) continue
    const checked = GraphState.checkPluginUpdate(await run(input as never, context), {
      plugin: owned.plugin,
      hook
    })
    if (Either.isLeft(checked)) throw new Error(checked.left)
    if (Object.keys(checked.right).length > 0) updates.push(checked.right)
  }
}

/** What the model is told about a tool call whose turn ended before the call was answered. */
export const INTERRUPTED_CALL =
  "This tool call was interrupted before it returned (the turn ended); it did not complete."

/**
 * The conversation as providers accept it: every tool call answered. A turn that ended between
 * the model's tool calls and their results (an abort, a crash) leaves calls without a
 * ToolMessage, and providers reject such a history; each gets a synthetic answer right after
 * its AI message. The stored history is not rewritten (the reducer only appends).
 */
export const answeredHistory = (messages: ReadonlyArray<BaseMessage>): ReadonlyArray<BaseMessage> => {
  const answered = answeredCallIds(messages)
  let out: Array<BaseMessage> | undefined
  messages.forEach((m, i) => {
    const dangling = unansweredCalls(m, answered)
    if (dangling.length > 0 && out === undefined) out = messages.slice(0, i)
    out?.push(m)
    for (const c of dangling) {
      out!.push(
        new ToolMessage({ content: INTERRUPTED_CALL, tool_call_id: c.id!, name: c.name, status: "error" })
      )
    }
  })
  return out ?? messages
}

/**
 * The model's answer as it joins the thread: with a fresh id when its id is already in the thread.
 * Core's messages reducer (docs/spec/graph-state.md#channels: append, dedupe by id, as LangGraph's
 * `add_messages`) replaces a message whose id it has seen, which is how a node deliberately updates
 * a message; but a provider that reuses response ids across calls (some OpenAI-compatible servers
 * do, and the scripted model derives its ids from the text) would then overwrite an earlier answer,
 * rewriting history and ending the turn on the user's message. A model call only ever appends.
 */
export const asNewMessage = (message: BaseMessage, thread: ReadonlyArray<BaseMessage>): BaseMessage => {
  const id = message.id
  if (id === undefined || !thread.some((m) => m.id === id)) return message
  if (!thread.includes(message)) {
    setMessageId(message, randomUUID())
    return message
  }
  // A middleware recovered with a message of the thread itself: append a copy, leave it as is.
  const fields: Record<string, unknown> = {}
  for (const key of Object.keys(message.lc_kwargs)) {
    fields[key] =
      key in message ? (message as unknown as Record<string, unknown>)[key] : message.lc_kwargs[key]
  }
  const Message = message.constructor as new (fields: Record<string, unknown>) => BaseMessage
  return new Message({ ...fields, id: randomUUID() })
}

/**
 * At a turn's end (an answer without tool calls): how the turn's preload compared with what the
 * model did (core's `Preload.agreement`), logged and handed to the host's `onAgreement`.
 */
const reportPreload = (rt: AgentRuntime, state: AgentStateValue, loaded: LoadedPlugins.LoadedPlugins) => {
  const turn = rt.preload(state)
  if (turn === undefined) return
  const called: Array<string> = []
  for (let i = turn.start + 1; i < state.messages.length; i++) {
    const m = state.messages[i]!
    if (AIMessage.isInstance(m)) for (const c of m.tool_calls ?? []) called.push(c.name)
  }
  const agreement = Preload.agreement(rt.catalog, turn.decision, turn.loadedBefore, loaded, called)
  // A turn that predicted nothing and loaded nothing says nothing worth a line at `info`.
  const log =
    agreement.kind === "no-prediction" && agreement.used.length === 0 ? rt.logger.debug : rt.logger.info
  log("preload", { ...agreement, used: agreement.used.join(",") })
  rt.preloadOption?.onAgreement?.(agreement)
}

/** System messages `systemMessage` keeps, by their text; past this it starts over. */
const SYSTEM_MESSAGES_KEPT = 64

// Safe at module level: a pure memo of the text; no step writes the message (hooks get the text, models read it).
const systemMessages = new Map<string, SystemMessage>()

/**
 * The system message of a call: the same object for the same text. A turn's calls send the same
 * prompt again until a load changes it, and every turn of a host composes the same few prompts
 * (one per set of loaded plugins); the message is only read (it never joins the thread), so one
 * object per text serves them all, and what a model keeps per message object it keeps once.
 */
const systemMessage = (text: string): SystemMessage => {
  let message = systemMessages.get(text)
  if (message === undefined) {
    if (systemMessages.size >= SYSTEM_MESSAGES_KEPT) systemMessages.clear()
    message = new SystemMessage(text)
    systemMessages.set(text, message)
  }
  return message
}

/** Builds the model step for one request. */
export const makeModelNode = (
  rt: AgentRuntime,
  model: BaseChatModel,
  basePrompt: string,
  emitter: Emitter
) => {
  if (typeof model.bindTools !== "function") {
    throw new TypeError(
      `The chat model '${model._llmType()}' cannot bind tools (no bindTools): the agent needs tool calling.`
    )
  }
  let lastSystem: { readonly loaded: string; readonly text: string } | undefined
  return async (
    state: AgentStateValue,
    config?: LangGraphRunnableConfig
  ): Promise<{ messages: Array<BaseMessage> } & GraphState.PluginStateUpdate> => {
    const ready = await rt.ready(state)
    // The turn's preload, ranked once with the host's ranking before its first call.
    await rt.preparePreload(state)
    const loaded = LoadedPlugins.fromUnknown(state.loadedPlugins)
    const offered = offerFor(rt, loaded, ready, state)
    // The prompt is a function of the loaded plugins alone within a request (the catalog, view
    // and base prompt are the request's): composed again only when a load changed them.
    const loadedKey = loaded.join("\u0000")
    if (lastSystem?.loaded !== loadedKey) {
      const text = SystemPrompt.compose({
        basePrompt,
        catalog: rt.catalog,
        loadedPlugins: loaded,
        view: rt.view
      })
      lastSystem = { loaded: loadedKey, text }
    }
    const system = lastSystem.text
    const context = rt.context(state)
    const middlewares = rt.scope.middlewares
    const history = answeredHistory(state.messages)
    const updates: Array<GraphState.PluginStateUpdate> = []
    await runHooks(
      middlewares,
      "beforeModel",
      { system, messages: history, tools: offered },
      context,
      updates
    )
    let message: BaseMessage
    // A streamed turn gets the answer's text chunk by chunk, through the turn's own stream
    // (`ModelStream.ts`); text held back until the call's reasoning event is written after it.
    const writer = config?.writer
    const write =
      config?.configurable?.[STREAM_TEXT] === true && writer !== undefined
        ? (event: EventSink.AgentEvent) => writer(event)
        : undefined
    let held: ReadonlyArray<string> = []
    // Outside the try: a turn out of bounds ends, no middleware recovers it.
    guardModelCall(rt)
    try {
      const tools = toDefinitions(offered)
      const bound = model.bindTools!(tools)
      const input = [systemMessage(system), ...history]
      const options = rt.request.signal === undefined ? {} : { signal: rt.request.signal }
      if (write === undefined) message = await bound.invoke(input, options)
      else ({ message, held } = await streamCall(bound, input, options, write))
      recordModelCall(rt, { input, tools }, message, usageOf(message))
    } catch (error) {
      for (const { middleware } of middlewares) {
        if (middleware.onError === undefined) continue
        const outcome: unknown = await middleware.onError(error, context)
        // Only an answer recovers: `{ recover: undefined }` (or any value without one) passes,
        // rather than ending the turn with an empty message.
        const recover = (outcome as { recover?: unknown } | null | undefined)?.recover
        if (recover !== undefined && recover !== null) {
          const answer = toAnswer(recover)
          const text = textOf(answer)
          if (write !== undefined && text.length > 0) write(messageEvent(text))
          return {
            ...GraphState.combinePluginUpdates(updates),
            messages: [asNewMessage(answer, state.messages)]
          }
        }
      }
      throw error
    }
    const reasoning = reasoningOf(message)
    if (reasoning !== undefined) emitter.reasoning(reasoning, config?.writer)
    if (write !== undefined) for (const text of held) write(messageEvent(text))
    await runHooks(middlewares, "afterModel", { message, usage: usageOf(message) }, context, updates)
    if (((message as AIMessage).tool_calls?.length ?? 0) === 0) reportPreload(rt, state, loaded)
    return { ...GraphState.combinePluginUpdates(updates), messages: [asNewMessage(message, state.messages)] }
  }
}
