/**
 * What a tool handler or a middleware receives (docs/spec/graph-state.md#the-runtimecontext): read-only history,
 * the session, the user, the shared state registered at boot, a logger and an abort signal.
 */
import type { GraphState, StateMessage } from "./GraphState.js"
import type { Capability } from "./internal/capability.js"
import type { InputAnswer, InputQuestion } from "./Wait.js"

/** The graph state as plugins see it: read-only, open to fields the type does not declare. */
export type ReadonlyState = Readonly<GraphState> & { readonly [key: string]: unknown }

/** A structured logger; adapters route it to the host's logger. */
export interface RuntimeLogger {
  readonly debug: (message: string, fields?: Record<string, unknown>) => void
  readonly info: (message: string, fields?: Record<string, unknown>) => void
  readonly warn: (message: string, fields?: Record<string, unknown>) => void
  readonly error: (message: string, fields?: Record<string, unknown>) => void
}

/** The context passed to every tool handler, sub-agent and middleware. */
export interface RuntimeContext {
  readonly history: {
    readonly state: ReadonlyState
    readonly messages: ReadonlyArray<StateMessage>
    /** The last `n` messages, oldest first. */
    readonly recent: (n: number) => ReadonlyArray<StateMessage>
    readonly userContext: Readonly<Record<string, unknown>>
  }
  readonly session: {
    readonly id: string
    readonly client: GraphState["client"]
  }
  readonly user: {
    readonly did: string
    /**
     * The capabilities the user's credentials grant (docs/plugins.md#requiring-capabilities), for a
     * handler that decides more finely than `requires` (check them with `Access.missing`).
     */
    readonly capabilities: ReadonlyArray<Capability>
  }
  /** Values registered by plugins' `getSharedState`, read once at boot. */
  readonly shared: Readonly<Record<string, unknown>>
  readonly logger: RuntimeLogger
  readonly signal: AbortSignal
  /**
   * The tool call being run, when a tool handler is the reader: `progress` reports how far it
   * got (an MCP server's progress notifications), shown on the call's `tool_call` event.
   */
  readonly toolCall?: ToolCallInfo | undefined
}

/** How far a running tool call got: `progress` of `total` when known, and a short message. */
export interface ToolProgress {
  readonly progress: number
  readonly total?: number | undefined
  readonly message?: string | undefined
}

/** The tool call a handler runs for. */
export interface ToolCallInfo {
  /** The model's tool call id. */
  readonly id: string
  readonly name: string
  /** Reports progress; never throws, and is ignored once the call has ended. */
  readonly progress: (progress: ToolProgress) => void
  /**
   * Asks the turn's user a question while the call runs (an MCP server's elicitation): the run
   * emits a `waiting` frame of kind `input` and this resolves with the user's values, their
   * decline, or `timed-out` at the wait's deadline (docs/waiting.md). Absent when the turn cannot
   * wait (a JSON turn, no wait store). Rejects when the turn is aborted.
   */
  readonly ask?: ((question: InputQuestion) => Promise<InputAnswer>) | undefined
}

/** A logger that drops everything: the default for pure tests. */
export const silentLogger: RuntimeLogger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {}
}

/** Builds a RuntimeContext from a state snapshot; adapters call this instead of assembling one. */
export const makeRuntimeContext = (options: {
  readonly state: GraphState
  readonly sessionId: string
  readonly did: string
  /** What the user's credentials grant; none when absent. */
  readonly capabilities?: ReadonlyArray<Capability> | undefined
  readonly shared?: Readonly<Record<string, unknown>>
  readonly logger?: RuntimeLogger
  readonly signal?: AbortSignal
}): RuntimeContext => {
  const messages = options.state.messages
  return {
    history: {
      state: options.state as ReadonlyState,
      messages,
      recent: (n) => (n <= 0 ? [] : messages.slice(-n)),
      userContext: options.state.userContext ?? {}
    },
    session: { id: options.sessionId, client: options.state.client },
    user: { did: options.did, capabilities: options.capabilities ?? [] },
    shared: options.shared ?? {},
    logger: options.logger ?? silentLogger,
    signal: options.signal ?? new AbortController().signal
  }
}
