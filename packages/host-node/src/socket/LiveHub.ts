/**
 * The live side of a session: the rooms its sockets join, the events its turns publish to them,
 * and the client-side tool calls waiting for a client's answer.
 *
 * A room is one user's session (`did` + session id: ids are per user, so two users' session
 * "s1" are two rooms). A call waits for the answer that names its call id and comes from a
 * socket of that same user and session; any other answer is ignored (and told so). A call no
 * client answers within the timeout, or made while no client of the session is connected, or
 * whose turn was aborted, rejects: the agent sees that as the tool's failure.
 */
import type { ClientToolCall } from "@plugboard/langgraph"
import type { Server } from "socket.io"

/** Who a socket (or a turn) is: the verified user and the session it joined. */
export interface SessionKey {
  readonly did: string
  readonly sessionId: string
}

/** What a client sends back for a call: `result` (or `output`) on success, `error` on failure. */
export interface ClientAnswer {
  /** The call answered: `toolCallId` as the QiForge client SDK 1.4 sends it, or `callId`. */
  readonly toolCallId?: unknown
  readonly callId?: unknown
  readonly result?: unknown
  readonly output?: unknown
  readonly error?: unknown
}

interface Pending {
  readonly kind: ClientToolCall["kind"]
  readonly resolve: (value: unknown) => void
  readonly reject: (error: Error) => void
}

/** The room of one user's session. */
export const roomOf = (key: SessionKey): string => `session:${key.did}\u0000${key.sessionId}`

const pendingKey = (key: SessionKey, callId: string): string => `${roomOf(key)}\u0000${callId}`

/** Rooms, published events and pending client calls; see the module doc. */
export class LiveHub {
  private io: Server | undefined
  private readonly pending = new Map<string, Pending>()

  /** `timeoutMs`: how long a client-side tool call waits for its answer. */
  constructor(readonly timeoutMs: number) {}

  /** Binds the Socket.IO server once it exists (after `listen`). */
  attach(io: Server | undefined): void {
    this.io = io
  }

  /** How many sockets of the session are connected. */
  listeners(key: SessionKey): number {
    return this.io?.sockets.adapter.rooms.get(roomOf(key))?.size ?? 0
  }

  /** Sends `event` to every socket of the session (no-op without sockets). */
  publish(key: SessionKey, event: string, payload: Readonly<Record<string, unknown>>): void {
    // Socket.IO encodes a broadcast before it looks at the room: a session nobody watches (the
    // common case) costs nothing this way.
    if (this.listeners(key) === 0) return
    this.io?.to(roomOf(key)).emit(event, payload)
  }

  /**
   * Sends a client-side tool call to the session's sockets (`browser_tool_call` or
   * `action_call`) and resolves with the client's result; rejects on timeout, abort, a client
   * error, or when no client of the session is connected.
   */
  callClient(
    key: SessionKey & { readonly requestId: string },
    call: ClientToolCall,
    signal?: AbortSignal
  ): Promise<unknown> {
    const id = pendingKey(key, call.callId)
    if (this.listeners(key) === 0) {
      return Promise.reject(
        new Error(`no client of this session is connected to run '${call.name}' (connect a socket first).`)
      )
    }
    if (signal?.aborted === true) return Promise.reject(new Error("the turn was aborted."))
    return new Promise<unknown>((resolve, reject) => {
      const settle = () => {
        clearTimeout(timer)
        signal?.removeEventListener("abort", onAbort)
        this.pending.delete(id)
      }
      const timer = setTimeout(() => {
        settle()
        reject(new Error(`the client did not answer within ${this.timeoutMs} ms.`))
      }, this.timeoutMs)
      const onAbort = () => {
        settle()
        reject(new Error("the turn was aborted."))
      }
      signal?.addEventListener("abort", onAbort, { once: true })
      this.pending.set(id, {
        kind: call.kind,
        resolve: (value) => {
          settle()
          resolve(value)
        },
        reject: (error) => {
          settle()
          reject(error)
        }
      })
      this.publish(key, call.kind === "browser" ? "browser_tool_call" : "action_call", {
        sessionId: key.sessionId,
        requestId: key.requestId,
        // `toolCallId` is the name the QiForge client SDK reads (and echoes in its answer).
        toolCallId: call.callId,
        callId: call.callId,
        toolName: call.name,
        args: call.args
      })
    })
  }

  /**
   * A client's answer from a socket of `key`: settles the matching call of that session and
   * kind. Returns whether it did (an answer for another session, user, kind or an unknown or
   * already settled call does nothing).
   */
  answer(key: SessionKey, kind: ClientToolCall["kind"], answer: unknown): boolean {
    if (typeof answer !== "object" || answer === null) return false
    const a = answer as ClientAnswer
    const callId = typeof a.toolCallId === "string" ? a.toolCallId : a.callId
    if (typeof callId !== "string") return false
    const pending = this.pending.get(pendingKey(key, callId))
    if (pending === undefined || pending.kind !== kind) return false
    if (a.error !== undefined && a.error !== null && a.error !== false) {
      pending.reject(
        new Error(`the client reported: ${typeof a.error === "string" ? a.error : JSON.stringify(a.error)}`)
      )
    } else {
      pending.resolve(a.result !== undefined ? a.result : a.output)
    }
    return true
  }

  /**
   * Shutdown: fails every waiting call with `reason`, disconnects every socket and stops the
   * Socket.IO engine (the HTTP server itself is closed by its owner). Idempotent.
   */
  close(reason: string): void {
    for (const pending of [...this.pending.values()]) pending.reject(new Error(reason))
    const io = this.io
    this.io = undefined
    if (io === undefined) return
    io.disconnectSockets(true)
    io.engine.close()
  }

  /** How many client calls are waiting (tests, shutdown). */
  get waiting(): number {
    return this.pending.size
  }
}
