/**
 * A turn cut short (aborted, failed, or stopped by its consumer) leaves the stored conversation
 * as the user saw it: the tool calls the model made that never got an answer are answered as
 * cancelled (so the thread stays a valid conversation for the next turn and for history), and
 * the answer as far as it was streamed is kept, marked as cut off (docs/http-api.md#runs).
 */
import { AIMessage, type BaseMessage, isAIMessage, ToolMessage } from "@langchain/core/messages"
import type { RuntimeLogger } from "@plugboard/core"
import { describe } from "@plugboard/core"

/** Text a tool call gets when its turn was cut short before it returned. */
export const CANCELLED_CALL = "Cancelled: the turn was aborted before this tool call returned."

/** The key of `response_metadata.plugboard` that marks an answer a cut-off turn kept. */
export const CUT_OFF = "cutOff"

/** The ids of the tool calls some ToolMessage of `messages` answers. */
export const answeredCallIds = (messages: ReadonlyArray<BaseMessage>): Set<string> => {
  const answered = new Set<string>()
  for (const m of messages) if (ToolMessage.isInstance(m)) answered.add(m.tool_call_id)
  return answered
}

/** The tool calls of `message` (an AI message) whose id is not in `answered`. */
export const unansweredCalls = (message: BaseMessage, answered: ReadonlySet<string>) =>
  isAIMessage(message)
    ? (message.tool_calls ?? []).filter((c) => c.id !== undefined && !answered.has(c.id))
    : []

/** Tool calls of AI messages that no ToolMessage answers. */
export const danglingCalls = (messages: ReadonlyArray<BaseMessage>) => {
  const answered = answeredCallIds(messages)
  return messages.flatMap((m) => unansweredCalls(m, answered))
}

/**
 * What `repairCutOff` needs of a main agent (`MainAgent` has it), spelled out so that this module,
 * which the model step imports, does not import the agent that imports it.
 */
export interface CutOffThread {
  readonly getState: () => Promise<{ readonly messages?: ReadonlyArray<BaseMessage> | undefined }>
  readonly request: { readonly requestId: string }
  readonly threadId: string
  readonly graph: {
    updateState(
      config: { readonly configurable: { readonly thread_id: string } },
      values: { readonly messages: Array<BaseMessage> },
      asNode: "agent"
    ): Promise<unknown>
  }
}

/**
 * Makes the stored thread match what the user saw of a turn cut short: its dangling tool calls
 * answered as cancelled, then `partialText` (when any) as an AI message with the turn's request
 * id (the id the client streamed it into), marked as cut off. Never rejects: a thread that cannot
 * be repaired is logged.
 */
export const repairCutOff = async (
  agent: CutOffThread,
  logger: RuntimeLogger,
  partialText: string
): Promise<void> => {
  try {
    const state = await agent.getState()
    const answers: Array<BaseMessage> = danglingCalls(state.messages ?? []).map(
      (c) => new ToolMessage({ content: CANCELLED_CALL, tool_call_id: c.id!, name: c.name, status: "error" })
    )
    if (partialText.length > 0) {
      answers.push(
        new AIMessage({
          id: agent.request.requestId,
          content: partialText,
          response_metadata: { plugboard: { [CUT_OFF]: true } }
        })
      )
    }
    if (answers.length === 0) return
    // As the agent loop's node, after which the graph ends: the thread's next run starts afresh.
    await agent.graph.updateState(
      { configurable: { thread_id: agent.threadId } },
      { messages: answers },
      "agent"
    )
  } catch (error) {
    logger.error("could not close the interrupted tool calls of a thread", {
      threadId: agent.threadId,
      error: describe(error)
    })
  }
}
