/**
 * A bare LangGraph agent graph: what the agent benchmark (`bench/agent.bench.ts`) compares
 * plugboard's agent with. A `StateGraph` over `MessagesAnnotation`, a model node that binds the
 * tool definitions it is given and calls the model, and a tool node of a few lines that answers
 * every call (a `load_capability` is acknowledged, any other tool returns a small JSON result)
 * and loops back to the model. No offer, gate, events, middleware or plugboard state: the
 * floor a LangGraph agent with the same steps costs.
 */
import type { BaseChatModel } from "@langchain/core/language_models/chat_models"
import { type AIMessage, ToolMessage } from "@langchain/core/messages"
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph"
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint"

/** Tool definitions to bind before and after the thread's first `load_capability`. */
export interface BareDefinitions {
  readonly before: ReadonlyArray<unknown>
  readonly after: ReadonlyArray<unknown>
}

/** Compiles the bare graph against `saver`. */
export const bareGraph = (model: BaseChatModel, definitions: BareDefinitions, saver: BaseCheckpointSaver) =>
  new StateGraph(MessagesAnnotation)
    .addNode("model", async (state) => {
      const loaded = state.messages.some((m) => ToolMessage.isInstance(m) && m.name === "load_capability")
      const bound = model.bindTools!((loaded ? definitions.after : definitions.before) as never)
      return { messages: [await bound.invoke(state.messages)] }
    })
    .addNode("tools", async (state) => {
      const last = state.messages.at(-1) as AIMessage
      const messages = (last.tool_calls ?? []).map(
        (c) =>
          new ToolMessage({
            tool_call_id: c.id ?? "",
            name: c.name,
            content: JSON.stringify(
              c.name === "load_capability" ? { newlyLoaded: c.args.names } : { rows: 3, args: c.args }
            )
          })
      )
      return { messages }
    })
    .addEdge(START, "model")
    .addConditionalEdges("model", (state) =>
      ((state.messages.at(-1) as AIMessage).tool_calls?.length ?? 0) > 0 ? "tools" : END
    )
    .addEdge("tools", "model")
    .compile({ checkpointer: saver })
