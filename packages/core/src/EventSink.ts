/**
 * The events of one agent turn as the client sees them (docs/spec/wire.md#events), and
 * the `EventSink` port the agent loop emits them through. The host's SSE writer is one sink,
 * `makeMemory` records them for tests, `fanOut` sends one event to several sinks.
 *
 * On the wire each event is `event: <name>\ndata: <one-line JSON>\n\n`, where `<name>` is the
 * event's `_tag` and the JSON is every other field (`toSse`).
 *
 * A sink serves one turn: it ends with exactly one `done`, after which it accepts nothing more
 * (`closed`) — the stream is over.
 */
import { Context, Effect, Layer, Schema } from "effect"

/**
 * The model's reasoning of one model call, when the provider exposes it. `content` is the older
 * clients' field; `reasoning` with `requestId`, `sessionId` and `isComplete` is the shape the
 * QiForge client SDK 1.4 reads (it shows the frames of a turn, concatenated, as one reasoning
 * message keyed by `requestId`). Both carry the same text.
 */
export const Reasoning = Schema.TaggedStruct("reasoning", {
  content: Schema.String,
  /** ISO-8601 time the chunk was produced. */
  timestamp: Schema.String,
  /** The HTTP request (`X-Request-Id`) of the turn. */
  requestId: Schema.optional(Schema.String),
  sessionId: Schema.optional(Schema.String),
  /** The same text as `content`. */
  reasoning: Schema.optional(Schema.String),
  /** True: each frame carries one model call's whole reasoning. */
  isComplete: Schema.optional(Schema.Boolean)
})

/** A chunk (or the whole) of the assistant's answer. */
export const Message = Schema.TaggedStruct("message", {
  content: Schema.String,
  /** ISO-8601 time the chunk was produced. */
  timestamp: Schema.String
})

/** A tool call's progress: once `isRunning` when it starts, once `done` with its output. */
export const ToolCall = Schema.TaggedStruct("tool_call", {
  /** The HTTP request (`X-Request-Id`) of the turn. */
  requestId: Schema.String,
  sessionId: Schema.String,
  toolName: Schema.String,
  args: Schema.Unknown,
  status: Schema.Literal("isRunning", "done"),
  /** Stable per tool call: the `isRunning` and `done` events of one call share it. */
  eventId: Schema.String,
  /**
   * On a call a code-mode program made (docs/code-mode.md): the `eventId` of the `run_code` call
   * it is nested under. Absent on every direct call; clients that do not know it show the call
   * as one more.
   */
  parentEventId: Schema.optional(Schema.String),
  output: Schema.optional(Schema.Unknown),
  /**
   * On a `done` event: true when the call failed — the tool reported its own failure (a
   * `ToolOutput` with `isError`), its handler threw, or the call was refused, invalid or cut off —
   * so the model was answered with an error. Absent on a success and on `isRunning`.
   */
  isError: Schema.optional(Schema.Boolean),
  /**
   * On an `isRunning` event after the first: how far the call got (an MCP server's progress).
   * Clients that upsert tool calls by `eventId` update the same bubble; others ignore it.
   */
  progress: Schema.optional(
    Schema.Struct({
      progress: Schema.Number,
      total: Schema.optional(Schema.Number),
      message: Schema.optional(Schema.String)
    })
  )
})

/** A failure the client should show; the stream still ends with `done`. */
export const ErrorEvent = Schema.TaggedStruct("error", {
  error: Schema.String,
  /** HTTP-style status, when the failure maps to one (402, 429, ...). */
  statusCode: Schema.optional(Schema.Number),
  /** Machine-readable cause, e.g. an error tag or reason. */
  code: Schema.optional(Schema.String),
  /** Anything else the client may render (JSON). */
  details: Schema.optional(Schema.Unknown)
})

/**
 * The last event of every turn. A streamed turn is a run (`RunStore`): its `done` says how the run
 * ended and, when it was cut short, carries the answer as far as it was streamed.
 */
export const Done = Schema.TaggedStruct("done", {
  status: Schema.optional(Schema.Literal("finished", "interrupted", "aborted", "failed")),
  /** The answer as streamed before the run was cut short (absent when it finished). */
  partialText: Schema.optional(Schema.String),
  /** Why the run was cut short: the abort's reason (`user`, `shutdown`, ...) or a turn bound's. */
  reason: Schema.optional(Schema.String)
})

/**
 * The first frame of a streamed turn: the run it is (`GET /runs/:runId?after=N` rejoins it) and
 * the request it answers. `resumed` is true on a run a restarted host continues. `message` is
 * the user's message the run answers: kept in the run's log, it is what puts the question back
 * in the thread when the host died before the turn saved (docs/architecture.md "After a crash").
 */
export const RunEvent = Schema.TaggedStruct("run", {
  runId: Schema.String,
  requestId: Schema.String,
  resumed: Schema.optional(Schema.Boolean),
  message: Schema.optional(Schema.String)
})

/**
 * The run stops for its user (issue 40, docs/waiting.md). Kind `approval`: a tool call waits for
 * approval; the run's `done` follows (`interrupted`, reason `waiting`). Kind `input`: a tool call
 * in flight (an MCP server's elicitation) asks a question, `message`, with a form, `schema`; the
 * run goes on once it is answered. Either way `POST /runs/:runId/resume` answers the wait. Kind
 * `connect`: a load waits for the user to connect an account at `url`; the host answers it when
 * the connection is made (docs/waiting.md#connect-waits).
 * Clients that do not know the event ignore it (the QiForge client SDK 1.4 does).
 */
export const Waiting = Schema.TaggedStruct("waiting", {
  waitId: Schema.String,
  runId: Schema.String,
  kind: Schema.Literal("approval", "input", "connect"),
  plugin: Schema.String,
  /** The tool of the call that waits (or that asks, for `input`). */
  tool: Schema.String,
  args: Schema.Unknown,
  reason: Schema.String,
  /** `input`: the question the tool asks. */
  message: Schema.optional(Schema.String),
  /** `input`: a JSON Schema of an object, the form the answer's `values` must fit. */
  schema: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  /** `connect`: the link that starts the user's connection; the host resumes the run once it is made. */
  url: Schema.optional(Schema.String),
  /** ISO-8601 time after which the host answers the wait itself (`timed-out`). */
  deadline: Schema.String
})

/** Every event of a turn, tagged by its SSE event name. */
export const AgentEvent = Schema.Union(Reasoning, Message, ToolCall, ErrorEvent, Done, RunEvent, Waiting)
/** Every event of a turn, tagged by its SSE event name. */
export type AgentEvent = typeof AgentEvent.Type
/** The SSE event names. */
export type AgentEventName = AgentEvent["_tag"]

/** Why an emit failed. */
export const EventSinkErrorReason = Schema.Literal("closed", "invalid-event", "unavailable")
/** Why an emit failed. */
export type EventSinkErrorReason = typeof EventSinkErrorReason.Type

/** An event could not be delivered. `closed`: the turn's stream already ended (or the client left). */
export class EventSinkError extends Schema.TaggedError<EventSinkError>()("EventSinkError", {
  reason: EventSinkErrorReason,
  message: Schema.String
}) {}

/** The operations of the EventSink port. */
export interface EventSinkService {
  /** Delivers one event, in order with the sink's previous events. */
  readonly emit: (event: AgentEvent) => Effect.Effect<void, EventSinkError>
}

/** The EventSink port: where the current turn's events go. */
export class EventSink extends Context.Tag("@plugboard/core/EventSink")<EventSink, EventSinkService>() {}

const decodeEvent = Schema.decodeUnknown(AgentEvent)

/**
 * Checks an untrusted value is an `AgentEvent`; fails `invalid-event` with the schema's words.
 * Fields this version does not know are dropped, so an older client reads a newer server.
 */
export const decode = (value: unknown): Effect.Effect<AgentEvent, EventSinkError> =>
  Effect.mapError(
    decodeEvent(value),
    (error) => new EventSinkError({ reason: "invalid-event", message: error.message })
  )

/** The SSE frame of an event: `event: <name>\ndata: <one-line JSON>\n\n`. */
export const toSse = (event: AgentEvent): string => {
  const { _tag, ...data } = event
  // JSON.stringify escapes line breaks inside strings, so the data is always one line.
  return `event: ${_tag}\ndata: ${JSON.stringify(data)}\n\n`
}

/** Parses one SSE frame produced by `toSse` back into an event (for clients and tests). */
export const fromSse = (frame: string): Effect.Effect<AgentEvent, EventSinkError> => {
  const lines = frame.replace(/\n+$/, "").split("\n")
  const name = lines.find((l) => l.startsWith("event: "))?.slice("event: ".length)
  const data = lines.find((l) => l.startsWith("data: "))?.slice("data: ".length)
  if (name === undefined || data === undefined) {
    return Effect.fail(
      new EventSinkError({ reason: "invalid-event", message: "SSE frame lacks an event or data line." })
    )
  }
  return Effect.flatMap(
    Effect.try({
      try: () => JSON.parse(data) as unknown,
      catch: () => new EventSinkError({ reason: "invalid-event", message: "SSE data is not JSON." })
    }),
    (payload) =>
      typeof payload === "object" && payload !== null && !Array.isArray(payload)
        ? decode({ ...payload, _tag: name })
        : Effect.fail(
            new EventSinkError({ reason: "invalid-event", message: "SSE data is not a JSON object." })
          )
  )
}

/**
 * Wraps a raw writer into a sink that keeps the turn contract: events pass in order, `done`
 * closes it, anything after is refused with `closed`. Host SSE writers build on this.
 */
export const make = (write: (event: AgentEvent) => Effect.Effect<void, EventSinkError>): EventSinkService => {
  let closed = false
  return {
    emit: (event) =>
      Effect.suspend(() => {
        if (closed) {
          return Effect.fail(
            new EventSinkError({
              reason: "closed",
              message: `Cannot emit '${event._tag}': the turn already ended.`
            })
          )
        }
        if (event._tag === "done") closed = true
        return write(event)
      })
  }
}

/** A sink that records what it receives, for tests. */
export interface MemorySink extends EventSinkService {
  /** Every event delivered so far, in order. */
  readonly events: Effect.Effect<ReadonlyArray<AgentEvent>>
}

/** Builds a recording sink (keeps the turn contract of `make`). */
export const makeMemory: Effect.Effect<MemorySink> = Effect.sync(() => {
  const events: Array<AgentEvent> = []
  const sink = make((event) => Effect.sync(() => void events.push(event)))
  return { emit: sink.emit, events: Effect.sync(() => [...events]) }
})

/** Gives tests access to the events recorded by `layerMemory`. */
export class MemoryEvents extends Context.Tag("@plugboard/core/EventSink/MemoryEvents")<
  MemoryEvents,
  MemorySink
>() {}

/** `EventSink` recording into memory, readable through `MemoryEvents`. */
export const layerMemory: Layer.Layer<EventSink | MemoryEvents> = Layer.effectContext(
  Effect.map(makeMemory, (sink) => Context.make(MemoryEvents, sink).pipe(Context.add(EventSink, sink)))
)

/**
 * Sends each event to every sink, in order of the list. One sink failing (a client that went
 * away) does not starve the others: all are tried, then the first failure is reported.
 */
export const fanOut = (sinks: ReadonlyArray<EventSinkService>): EventSinkService => ({
  emit: (event) =>
    Effect.flatMap(
      Effect.forEach(sinks, (sink) => Effect.either(sink.emit(event))),
      (results) => {
        const failed = results.find((r) => r._tag === "Left")
        return failed === undefined ? Effect.void : Effect.fail(failed.left)
      }
    )
})
