/**
 * The floor's graph (`bench/server/floor.ts`): the bare graph of `bareGraph.ts` on the state seed
 * 004 requires (`AgentState`: thirteen channels, messages as full copies), with the `tool_call`
 * events the wire contract requires (`isRunning`, then `done` with the output, written to the
 * custom stream) and `loadedPlugins` updated by a load. No offer, gate, middleware or prompt.
 */
import type { BaseChatModel } from "@langchain/core/language_models/chat_models"
import { type AIMessage, type BaseMessage, HumanMessage, ToolMessage } from "@langchain/core/messages"
import { END, type LangGraphRunnableConfig, START, StateGraph } from "@langchain/langgraph"
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint"
import type { AgentGraph } from "../src/MainAgent.js"
import { AgentState, type AgentStateValue } from "../src/State.js"
import type { BareDefinitions } from "./bareGraph.js"

/** A `tool_call` event's own fields, as the floor's tool node writes them. */
export interface FloorToolCall {
  readonly toolName: string
  readonly args: unknown
  readonly status: "isRunning" | "done"
  readonly eventId: string
  readonly output?: string
}

/**
 * Compiles the floor's graph against `saver`; the model is offered `after` once `plugin` is loaded.
 * The model ⇄ tools loop runs in one node, as plugboard's (`AgentLoop.ts`): the cheapest way.
 */
export const floorGraph = (
  model: BaseChatModel,
  definitions: BareDefinitions,
  plugin: string,
  saver: BaseCheckpointSaver
): AgentGraph =>
  new StateGraph(AgentState)
    .addNode("agent", async (state: AgentStateValue, config: LangGraphRunnableConfig) => {
      const added: Array<BaseMessage> = []
      let thread = state.messages
      let loaded: ReadonlyArray<string> = []
      for (;;) {
        const offered = state.loadedPlugins.includes(plugin) || loaded.includes(plugin)
        const bound = model.bindTools!((offered ? definitions.after : definitions.before) as never)
        const answer = (await bound.invoke(thread)) as AIMessage
        added.push(answer)
        thread = [...thread, answer]
        if ((answer.tool_calls?.length ?? 0) === 0) break
        for (const call of answer.tool_calls ?? []) {
          const eventId = call.id ?? ""
          const running: FloorToolCall = {
            toolName: call.name,
            args: call.args,
            status: "isRunning",
            eventId
          }
          config.writer?.(running)
          if (call.name === "load_capability") loaded = call.args.names as ReadonlyArray<string>
          const output = JSON.stringify(
            call.name === "load_capability" ? { newlyLoaded: loaded } : { rows: 3, args: call.args }
          )
          config.writer?.({ ...running, status: "done", output } satisfies FloorToolCall)
          const answered = new ToolMessage({ tool_call_id: eventId, name: call.name, content: output })
          added.push(answered)
          thread = [...thread, answered]
        }
      }
      return loaded.length === 0 ? { messages: added } : { messages: added, loadedPlugins: loaded }
    })
    .addEdge(START, "agent")
    .addEdge("agent", END)
    .compile({ checkpointer: saver })

/** A turn's input on the floor's graph: the user's message and the caller's DID (`config`). */
export const floorInput = (message: string, did: string) => ({
  messages: [new HumanMessage(message)],
  config: { did }
})
