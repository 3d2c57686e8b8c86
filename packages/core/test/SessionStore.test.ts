import { Effect } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import * as Clock from "../src/Clock.js"
import * as SessionStore from "../src/SessionStore.js"
import { sessionStoreConformance } from "../src/testing/index.js"

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
