/**
 * What a turn tells the app as it goes (docs/ai-sdk.md#events): a tool call started, progressed
 * and ended, and plugins were loaded. The same moments the oracle server streams as `tool_call`
 * events, as plain callbacks: the app logs them, streams them to its UI, or stores the loads.
 */
import type { ToolCall, ToolOutput, ToolProgress, Wait } from "@plugboard/core"

/** A tool call as the model made it. */
export interface ToolCallEvent {
  /** The AI SDK's tool call id. */
  readonly toolCallId: string
  readonly toolName: string
  readonly args: unknown
  /** The plugin that owns the tool, when it has one (absent for meta-tools and unknown names). */
  readonly plugin?: string | undefined
}

/** A tool call that ended: what the model was answered, and how. */
export interface ToolEndEvent extends ToolCallEvent {
  /** `ok` and `meta` are successes; anything else the model sees as an error answer. */
  readonly outcome: ToolCall.Outcome
  /** The answer's text, as the model reads it. */
  readonly text: string
  /** The tool's content blocks, when it answered with a `ToolOutput` (an MCP tool does). */
  readonly output?: ToolOutput.ToolOutput | undefined
}

/** A load that added plugins to the thread. */
export interface PluginsLoadedEvent {
  readonly toolCallId: string
  /** What this load added, in order. */
  readonly names: ReadonlyArray<string>
  /** The thread's `loadedPlugins` after it: store it if the app's history may lose loads. */
  readonly loadedPlugins: ReadonlyArray<string>
}

/** The callbacks of a turn; each is optional, and one that throws is logged and ignored. */
export interface TurnCallbacks {
  readonly onToolStart?: ((event: ToolCallEvent) => void) | undefined
  readonly onToolProgress?: ((event: ToolCallEvent & { readonly progress: ToolProgress }) => void) | undefined
  readonly onToolEnd?: ((event: ToolEndEvent) => void) | undefined
  readonly onPluginsLoaded?: ((event: PluginsLoadedEvent) => void) | undefined
  /**
   * A tool asks its user a question while it runs (an MCP server's elicitation,
   * docs/waiting.md): `question` is the text and a JSON Schema of an object. Answer
   * `{ _tag: "values", values }` or `{ _tag: "declined" }`; the answer goes back to that server on
   * that call, which checks the values. Absent, or when it throws, the server is declined.
   */
  readonly onToolQuestion?:
    | ((
        event: ToolCallEvent & { readonly question: Wait.InputQuestion }
      ) => Promise<Wait.InputAnswer> | Wait.InputAnswer)
    | undefined
}
