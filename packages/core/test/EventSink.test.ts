import { EventSinkConformance } from "@plugboard/testing"
import { Effect, Exit } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import * as EventSink from "../src/EventSink.js"

EventSinkConformance.run("memory", () =>
  Effect.map(EventSink.makeMemory, (m) => ({ sink: m, received: m.events }))
)

// A sink that goes through the wire format, as the host's SSE writer does: proves `toSse` and
// `fromSse` carry every event unchanged.
EventSinkConformance.run("sse round-trip", () =>
  Effect.sync(() => {
    const frames: Array<string> = []
    const sink = EventSink.make((event) => Effect.sync(() => void frames.push(EventSink.toSse(event))))
    return { sink, received: Effect.forEach(frames, EventSink.fromSse) }
  })
)

EventSinkConformance.run("fan-out (each branch)", () =>
  Effect.gen(function* () {
    const a = yield* EventSink.makeMemory
    const b = yield* EventSink.makeMemory
    const sink = EventSink.make((event) => EventSink.fanOut([a, b]).emit(event))
    const received = Effect.gen(function* () {
      const [ea, eb] = [yield* a.events, yield* b.events]
      expect(eb).toEqual(ea)
      return ea
    })
    return { sink, received }
  })
)

const failure = <A>(exit: Exit.Exit<A, EventSink.EventSinkError>) =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined

describe("EventSink wire format", () => {
  it("writes `event: <name>\\ndata: <one-line JSON>\\n\\n`", () => {
    expect(EventSink.toSse({ _tag: "message", content: "a\nb", timestamp: "t" })).toBe(
      'event: message\ndata: {"content":"a\\nb","timestamp":"t"}\n\n'
    )
    expect(EventSink.toSse({ _tag: "done" })).toBe("event: done\ndata: {}\n\n")
  })

  it("property: every frame is exactly two lines and a blank line", () =>
    fc.assert(
      fc.property(EventSinkConformance.arbitraryEvent, (event) => {
        const frame = EventSink.toSse(event)
        expect(frame.endsWith("\n\n")).toBe(true)
        const lines = frame.slice(0, -2).split("\n")
        expect(lines).toHaveLength(2)
        expect(lines[0]).toBe(`event: ${event._tag}`)
        expect(lines[1]!.startsWith("data: ")).toBe(true)
        expect(/[\r\n]/.test(lines[1]!)).toBe(false)
      })
    ))

  it("refuses frames and values that are not events, with 'invalid-event'", async () => {
    const bad = [
      "data: {}\n\n",
      "event: message\n\n",
      "event: message\ndata: not json\n\n",
      "event: message\ndata: [1,2]\n\n",
      "event: message\ndata: {}\n\n",
      'event: unknown\ndata: {"content":"x"}\n\n',
      'event: tool_call\ndata: {"requestId":"r","sessionId":"s","toolName":"t","args":{},"status":"running","eventId":"e"}\n\n'
    ]
    for (const frame of bad) {
      const error = failure(await Effect.runPromiseExit(EventSink.fromSse(frame)))
      expect(error?.reason, frame).toBe("invalid-event")
      expect(error?.message.length).toBeGreaterThan(0)
    }
    expect(
      failure(await Effect.runPromiseExit(EventSink.decode({ _tag: "message", content: 1 })))?.reason
    ).toBe("invalid-event")
  })
})

describe("EventSink layers and fan-out", () => {
  it("drops fields it does not know, for forward compatibility", async () => {
    const event = await Effect.runPromise(EventSink.fromSse('event: done\ndata: {"extra":1}\n\n'))
    expect(event).toEqual({ _tag: "done" })
  })

  it("layerMemory exposes what was emitted through MemoryEvents", async () => {
    const events = await Effect.gen(function* () {
      const sink = yield* EventSink.EventSink
      yield* sink.emit({ _tag: "message", content: "x", timestamp: "t" })
      yield* sink.emit({ _tag: "done" })
      return yield* (yield* EventSink.MemoryEvents).events
    }).pipe(Effect.provide(EventSink.layerMemory), Effect.runPromise)
    expect(events.map((e) => e._tag)).toEqual(["message", "done"])
  })

  it("a failing branch does not starve the others, and its error is reported", async () => {
    const gone = EventSink.make(() =>
      Effect.fail(new EventSink.EventSinkError({ reason: "unavailable", message: "client went away" }))
    )
    const kept = await Effect.runPromise(EventSink.makeMemory)
    const fan = EventSink.fanOut([gone, kept])
    const exit = await Effect.runPromiseExit(fan.emit({ _tag: "message", content: "x", timestamp: "t" }))
    expect(failure(exit)?.reason).toBe("unavailable")
    expect(await Effect.runPromise(kept.events)).toHaveLength(1)
  })
})
