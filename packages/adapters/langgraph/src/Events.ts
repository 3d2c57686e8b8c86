/**
 * Emits the agent's typed events: the model's reasoning (one `reasoning` event per model call
 * whose provider exposed any, before that call's tool calls), and every tool call (plugin,
 * sub-agent, meta-tool, refused) as an `isRunning` event, then a `done` event with its output,
 * sharing one `eventId`. Events go to the host's sink and to the listeners of the turn being run
 * (`runTurn` / `streamTurn`).
 */
import { randomUUID } from "node:crypto"
import type { EventSink, RuntimeLogger, ToolProgress } from "@plugboard/core"
import { describe } from "@plugboard/core"
import { Effect } from "effect"

/** A tool call event (core's `EventSink.ToolCall`). */
export type ToolCallEvent = typeof EventSink.ToolCall.Type

/** A call that emitted `isRunning` and not yet `done`; `parentEventId` when a program made it. */
interface Running {
  readonly toolName: string
  readonly args: unknown
  readonly parentEventId?: string | undefined
}

const parentOf = (running: Running): { readonly parentEventId?: string } =>
  running.parentEventId === undefined ? {} : { parentEventId: running.parentEventId }

/** Tees events to the host's sink and to per-turn listeners. */
export class Emitter {
  private readonly listeners = new Set<(event: EventSink.AgentEvent) => void>()
  // Tool calls that emitted `isRunning` and not yet `done`: what `interrupt` closes.
  private readonly running = new Map<string, Running>()
  // Sink deliveries are chained so an asynchronous sink still receives events in order.
  private delivered: Promise<void> = Promise.resolve()

  constructor(
    private readonly ids: { readonly requestId: string; readonly sessionId: string },
    private readonly sink: EventSink.EventSinkService | undefined,
    private readonly logger: RuntimeLogger
  ) {}

  /** Adds a listener; returns the function that removes it. */
  listen(listener: (event: EventSink.AgentEvent) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /**
   * Delivers one event. `writer` is LangGraph's custom-stream writer of the running node, set
   * when the turn is streamed (`streamTurn`): through it the event takes its place in the same
   * ordered stream as the model's tokens.
   */
  emit(event: EventSink.AgentEvent, writer?: (chunk: unknown) => void): void {
    writer?.(event)
    for (const l of this.listeners) l(event)
    const sink = this.sink
    if (sink === undefined) return
    // A broken sink (a client that went away) must not fail the turn: the state is still saved.
    this.delivered = this.delivered.then(() =>
      Effect.runPromise(Effect.either(sink.emit(event))).then(
        (r) => (r._tag === "Left" ? this.sinkFailed(r.left) : undefined),
        (e: unknown) => this.sinkFailed(e)
      )
    )
  }

  /** Resolves once the sink has received every event emitted so far. */
  flush(): Promise<void> {
    return this.delivered
  }

  /** Emits the reasoning a model call exposed (core's `EventSink.Reasoning`). */
  reasoning(content: string, writer?: (chunk: unknown) => void): void {
    this.emit(
      {
        _tag: "reasoning",
        content,
        timestamp: new Date().toISOString(),
        ...this.ids,
        reasoning: content,
        isComplete: true
      },
      writer
    )
  }

  /** Emits `isRunning` for a tool call; returns the event id its `done` must reuse. */
  toolStarted(
    toolName: string,
    args: unknown,
    writer?: (chunk: unknown) => void,
    parentEventId?: string | undefined
  ): string {
    const eventId = randomUUID()
    const running: Running = { toolName, args, parentEventId }
    this.running.set(eventId, running)
    this.emit(
      { _tag: "tool_call", ...this.ids, toolName, args, status: "isRunning", eventId, ...parentOf(running) },
      writer
    )
    return eventId
  }

  /**
   * Emits an `isRunning` event carrying the call's progress, while the call runs (a report that
   * arrives after its `done`, or after `interrupt`, is dropped: the client saw it end).
   */
  toolProgress(eventId: string, progress: ToolProgress, writer?: (chunk: unknown) => void): void {
    const running = this.running.get(eventId)
    if (running === undefined) return
    const { toolName, args } = running
    const shown = {
      progress: progress.progress,
      ...(progress.total === undefined ? {} : { total: progress.total }),
      ...(progress.message === undefined ? {} : { message: progress.message })
    }
    this.emit(
      {
        _tag: "tool_call",
        ...this.ids,
        toolName,
        args,
        status: "isRunning",
        eventId,
        ...parentOf(running),
        progress: shown
      },
      writer
    )
  }

  /**
   * Emits `done` with the tool's output, and `isError: true` when the model was answered with an
   * error (the ToolMessage's `status: "error"`). Once per call: a call `interrupt` already closed
   * (its handler returned after the turn was aborted) emits nothing more.
   */
  toolDone(
    eventId: string,
    toolName: string,
    args: unknown,
    output: string,
    isError: boolean,
    writer?: (chunk: unknown) => void
  ): void {
    const running = this.running.get(eventId)
    if (running === undefined) return
    this.running.delete(eventId)
    this.emit(this.doneEvent(eventId, { ...running, toolName, args }, output, isError), writer)
  }

  /** A call's `done` event; `isError` only when the model was answered with an error. */
  private doneEvent(eventId: string, running: Running, output: string, isError: boolean): ToolCallEvent {
    return {
      _tag: "tool_call",
      ...this.ids,
      toolName: running.toolName,
      args: running.args,
      status: "done",
      eventId,
      ...parentOf(running),
      output,
      ...(isError ? { isError: true } : {})
    }
  }

  /**
   * Emits `done` with `output` for every tool call still running. A turn calls it before it
   * settles: an aborted turn ends while its handlers may still run, and the client must see
   * every call it was told about end (and nothing after the host's final `done`). Returns the
   * events emitted, for a stream to yield.
   */
  interrupt(output: string): ReadonlyArray<ToolCallEvent> {
    const open = [...this.running]
    this.running.clear()
    return open.map(([eventId, running]) => {
      // A call cut off by the turn's end is stored as an error answer (CutOff.ts).
      const event = this.doneEvent(eventId, running, output, true)
      this.emit(event)
      return event
    })
  }

  private sinkFailed(e: unknown): void {
    this.logger.warn("event sink failed", { error: describe(e) })
  }
}
