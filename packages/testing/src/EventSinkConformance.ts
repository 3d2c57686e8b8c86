/**
 * The conformance suite of the `EventSink` port. The factory returns a fresh sink for one turn
 * and a way to read back what reached the other end (for an SSE sink: the frames written to
 * the response, parsed with `EventSink.fromSse`):
 *
 * ```ts
 * EventSinkConformance.run("memory", () => Effect.map(EventSink.makeMemory, (m) => ({ sink: m, received: m.events })))
 * ```
 */
import type { EventSink } from "@plugboard/core"
import { Effect, Exit, type Scope } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { acquire, type Factory, failureOf } from "./Factory.js"

/** A sink under test and what has arrived at its far end, in order. */
export interface EventSinkHarness {
  readonly sink: EventSink.EventSinkService
  readonly received: Effect.Effect<ReadonlyArray<EventSink.AgentEvent>, unknown>
}

/** Options of the suite. */
export interface EventSinkConformanceOptions {
  /** fast-check runs of the round-trip property (default 50). */
  readonly numRuns?: number
}

const T = "2025-01-01T00:00:00.000Z"

/** One event of each kind, with the optional fields both present and absent. */
export const sampleTurn: ReadonlyArray<EventSink.AgentEvent> = [
  { _tag: "reasoning", content: "The user wants weather; load the plugin.", timestamp: T },
  {
    _tag: "tool_call",
    requestId: "req-1",
    sessionId: "s-1",
    toolName: "load_capability",
    args: { names: ["weather"] },
    status: "isRunning",
    eventId: "e-1"
  },
  {
    _tag: "tool_call",
    requestId: "req-1",
    sessionId: "s-1",
    toolName: "load_capability",
    args: { names: ["weather"] },
    status: "done",
    eventId: "e-1",
    output: { loaded: ["weather"], note: "line one\nline two" }
  },
  { _tag: "message", content: "It is 21 °C in Berlin.\n\nSunny.", timestamp: T },
  { _tag: "error", error: "Tool failed" },
  {
    _tag: "error",
    error: "Payment required",
    statusCode: 402,
    code: "insufficient-credits",
    details: { balance: 0 }
  },
  { _tag: "done" }
]

/**
 * JSON values as they come out of the wire: `fc.jsonValue` may generate `-0`, which JSON writes
 * as `0`, so a round-tripping sink would be blamed for a difference JSON itself makes.
 */
const wireJson = fc.jsonValue({ maxDepth: 2 }).map((value) => JSON.parse(JSON.stringify(value)) as unknown)
const jsonObject = fc.dictionary(fc.string({ maxLength: 8 }), wireJson, { maxKeys: 4 })
const text = fc.string({ unit: "binary", maxLength: 40 })

/** Arbitrary events whose payloads survive JSON (what any wire sink must carry). */
export const arbitraryEvent: fc.Arbitrary<EventSink.AgentEvent> = fc.oneof(
  fc.record({ _tag: fc.constant("reasoning" as const), content: text, timestamp: fc.constant(T) }),
  fc.record({ _tag: fc.constant("message" as const), content: text, timestamp: fc.constant(T) }),
  fc.record(
    {
      _tag: fc.constant("tool_call" as const),
      requestId: fc.string({ minLength: 1, maxLength: 8 }),
      sessionId: fc.string({ minLength: 1, maxLength: 8 }),
      toolName: fc.string({ minLength: 1, maxLength: 16 }),
      args: jsonObject,
      status: fc.constantFrom("isRunning" as const, "done" as const),
      eventId: fc.uuid(),
      output: wireJson
    },
    { requiredKeys: ["_tag", "requestId", "sessionId", "toolName", "args", "status", "eventId"] }
  ),
  fc.record(
    {
      _tag: fc.constant("error" as const),
      error: text,
      statusCode: fc.integer({ min: 400, max: 599 }),
      code: fc.string({ maxLength: 12 }),
      details: wireJson
    },
    { requiredKeys: ["_tag", "error"] }
  )
)

const withSink = <A>(
  factory: Factory<EventSinkHarness>,
  body: (h: EventSinkHarness) => Effect.Effect<A, unknown, Scope.Scope>
): Promise<A> => Effect.runPromise(Effect.scoped(Effect.flatMap(acquire(factory), body)))

/** Registers the EventSink conformance suite for one implementation. */
export const run = (
  name: string,
  factory: Factory<EventSinkHarness>,
  options: EventSinkConformanceOptions = {}
): void => {
  describe(`EventSink conformance: ${name}`, () => {
    it("delivers every kind of event, unchanged and in order", () =>
      withSink(factory, ({ sink, received }) =>
        Effect.gen(function* () {
          for (const event of sampleTurn) yield* sink.emit(event)
          expect(yield* received).toEqual(sampleTurn)
        })
      ))

    it("`done` ends the turn: later events are refused with 'closed' and never delivered", () =>
      withSink(factory, ({ sink, received }) =>
        Effect.gen(function* () {
          yield* sink.emit({ _tag: "message", content: "hi", timestamp: T })
          yield* sink.emit({ _tag: "done" })
          for (const late of [
            { _tag: "message", content: "late", timestamp: T },
            { _tag: "done" }
          ] as const) {
            const exit = yield* Effect.exit(sink.emit(late))
            expect(Exit.isFailure(exit)).toBe(true)
            const error = failureOf(exit) as EventSink.EventSinkError | undefined
            expect(error?._tag).toBe("EventSinkError")
            expect(error?.reason).toBe("closed")
          }
          expect((yield* received).map((e) => e._tag)).toEqual(["message", "done"])
        })
      ))

    it("concurrent emits are each delivered exactly once", () =>
      withSink(factory, ({ sink, received }) =>
        Effect.gen(function* () {
          const events = Array.from(
            { length: 100 },
            (_, i): EventSink.AgentEvent => ({ _tag: "message", content: `chunk ${i}`, timestamp: T })
          )
          yield* Effect.all(
            events.map((e) => sink.emit(e)),
            { concurrency: "unbounded" }
          )
          yield* sink.emit({ _tag: "done" })
          const got = yield* received
          expect(got).toHaveLength(101)
          expect(new Set(got.slice(0, 100).map((e) => (e._tag === "message" ? e.content : ""))).size).toBe(
            100
          )
          expect(got.at(-1)).toEqual({ _tag: "done" })
        })
      ))

    it("property: any sequence of events followed by `done` arrives as sent", () =>
      fc.assert(
        fc.asyncProperty(fc.array(arbitraryEvent, { maxLength: 20 }), (events) =>
          withSink(factory, ({ sink, received }) =>
            Effect.gen(function* () {
              const turn: ReadonlyArray<EventSink.AgentEvent> = [...events, { _tag: "done" }]
              for (const event of turn) yield* sink.emit(event)
              expect(yield* received).toEqual(turn)
            })
          )
        ),
        { numRuns: options.numRuns ?? 50 }
      ))
  })
}
