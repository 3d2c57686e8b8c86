import { sessionStoreConformance } from "@plugboard/testing"
import { Effect } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import * as Clock from "../src/Clock.js"
import * as SessionStore from "../src/SessionStore.js"

sessionStoreConformance("memory", () => SessionStore.layerMemory)

describe("SessionStore helpers", () => {
  it("applyPatch never moves lastUpdatedAt backwards", async () => {
    const record: SessionStore.SessionRecord = {
      sessionId: "s",
      title: "t",
      createdAtMs: 100,
      updatedAtMs: 500,
      oracleName: undefined,
      oracleDid: undefined,
      lastProcessedCount: 0,
      userContext: undefined
    }
    const next = await Effect.runPromise(SessionStore.applyPatch(record, { title: "u" }, 200))
    expect(next.updatedAtMs).toBe(500)
    expect(next.title).toBe("u")
  })

  it("two memory stores do not share state", async () => {
    const program = Effect.gen(function* () {
      const a = yield* SessionStore.makeMemory
      const b = yield* SessionStore.makeMemory
      yield* a.create("did:key:x", { sessionId: "s" })
      return yield* b.get("did:key:x", "s")
    })
    expect(await Effect.runPromise(Effect.provide(program, Clock.layer))).toBeUndefined()
  })
})

describe("decoding stored user context", () => {
  it("an object decodes as itself; damaged context is dropped, never an error", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (context) => {
        expect(SessionStore.decodeUserContext(JSON.stringify(context))).toEqual(
          JSON.parse(JSON.stringify(context))
        )
      })
    )
    expect(SessionStore.decodeUserContext(null)).toBeUndefined()
    expect(SessionStore.decodeUserContext('{"unfinished":')).toBeUndefined()
    expect(SessionStore.decodeUserContext("[1,2]")).toBeUndefined()
  })
})

describe("issue 36 item 20: a session is titled from its first message", () => {
  it("titleFrom keeps a short message whole, on one line", () => {
    expect(SessionStore.titleFrom("  What's the weather\n in   Berlin?  ")).toBe(
      "What's the weather in Berlin?"
    )
  })

  it("titleFrom cuts a long message at a word, within the limit, and marks the cut", () => {
    const message = "Please convert twenty euros into dollars and then tell me what that buys in Berlin today"
    const title = SessionStore.titleFrom(message)
    expect(title).toBe("Please convert twenty euros into dollars and then tell me…")
    expect(Array.from(title).length).toBeLessThanOrEqual(SessionStore.MAX_DERIVED_TITLE_LENGTH)
    expect(message.startsWith(title.slice(0, -1))).toBe(true)
  })

  it("titleFrom cuts one very long word where it reaches the limit; an empty message keeps the default", () => {
    const title = SessionStore.titleFrom("x".repeat(500))
    expect(title).toBe(`${"x".repeat(SessionStore.MAX_DERIVED_TITLE_LENGTH - 1)}…`)
    expect(SessionStore.titleFrom(" \n\t")).toBe(SessionStore.DEFAULT_TITLE)
  })

  it("titleFrom never exceeds the limit nor a valid title's length", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 400 }), (s) => {
        const title = SessionStore.titleFrom(s)
        expect(Array.from(title).length).toBeLessThanOrEqual(SessionStore.MAX_DERIVED_TITLE_LENGTH)
        expect(title.trim()).not.toBe("")
      })
    )
  })
})
