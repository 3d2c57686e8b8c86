/**
 * Where the LangGraph loop keeps a tool result that was cut (core's `ResultPages`,
 * docs/spec/meta-tools.md#read_result): in the artifact of the ToolMessage that carries its first
 * page. The artifact is checkpointed with the message (once: messages are stored as deltas), is
 * deleted with the thread, and is never sent to a provider, so the whole answer is kept without
 * entering any model call; `read_result` finds it by the tool call's id.
 */
import { type BaseMessage, ToolMessage } from "@langchain/core/messages"

/** The whole answer a ToolMessage's artifact keeps, when its content is a cut first page. */
export const keptResultOf = (message: BaseMessage): string | undefined => {
  if (!ToolMessage.isInstance(message)) return undefined
  const kept = (message.artifact as { plugboard?: { result?: unknown } } | undefined)?.plugboard?.result
  return typeof kept === "string" ? kept : undefined
}

/** Whether the thread holds a kept result (then `read_result` is offered). */
export const holdsKeptResult = (messages: ReadonlyArray<BaseMessage>): boolean =>
  messages.some((m) => keptResultOf(m) !== undefined)

/** The thread's kept results by handle (the tool call's id), read once on the first lookup. */
export const keptResults = (
  messages: ReadonlyArray<BaseMessage>
): ((handle: string) => string | undefined) => {
  let byHandle: Map<string, string> | undefined
  return (handle) => {
    if (byHandle === undefined) {
      byHandle = new Map()
      for (const m of messages) {
        const kept = keptResultOf(m)
        if (kept !== undefined) byHandle.set((m as ToolMessage).tool_call_id, kept)
      }
    }
    return byHandle.get(handle)
  }
}
