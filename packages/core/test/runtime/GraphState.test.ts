import { GraphState } from "@plugboard/core"
import { Either } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"

const fresh = () => GraphState.initial({ did: "did:key:alice", client: "portal" })

describe("GraphState.initial", () => {
  it("starts a thread empty, with the caller's identity", () => {
    expect(fresh()).toEqual({
      messages: [],
      config: { did: "did:key:alice" },
      client: "portal",
      userContext: {},
      loadedPlugins: []
    })
    expect(GraphState.initial({ did: "d", client: "matrix", wsId: "ws1" }).config).toEqual({
      did: "d",
      wsId: "ws1"
    })
  })
})

describe("GraphState reducers", () => {
  it("messages: appends, and an update with an existing id replaces that message in place", () => {
    const s1 = GraphState.apply(fresh(), {
      messages: [
        { id: "1", text: "hi" },
        { id: "2", text: "yo" }
      ]
    })
    const s2 = GraphState.apply(s1, {
      messages: [
        { id: "1", text: "hi (edited)" },
        { id: "3", text: "new" }
      ]
    })
    expect(s2.messages).toEqual([
      { id: "1", text: "hi (edited)" },
      { id: "2", text: "yo" },
      { id: "3", text: "new" }
    ])
  })

  it("messages: without an id, always appended; a duplicate id within one update keeps the last", () => {
    const s = GraphState.apply(fresh(), {
      messages: [{ text: "a" }, { text: "a" }, { id: "x", n: 1 }, { id: "x", n: 2 }]
    })
    expect(s.messages).toEqual([{ text: "a" }, { text: "a" }, { id: "x", n: 2 }])
  })

  it("messages as deltas: a batch of writes gives what folding them one by one gives, however it is split", () => {
    const msg = fc.record(
      { id: fc.option(fc.constantFrom("a", "b", "c", "d"), { nil: undefined }), v: fc.nat(9) },
      { requiredKeys: ["v"] }
    )
    const write = fc.oneof(msg, fc.array(msg, { maxLength: 3 }))
    fc.assert(
      fc.property(fc.array(write, { maxLength: 8 }), fc.nat(8), (writes, cut) => {
        const asArray = (w: (typeof writes)[number]) => (Array.isArray(w) ? w : [w])
        let folded: ReadonlyArray<GraphState.StateMessage> = []
        for (const w of writes) folded = GraphState.appendMessages(folded, asArray(w))
        const at = Math.min(cut, writes.length)
        const split = GraphState.appendMessageBatches(
          GraphState.appendMessageBatches([], writes.slice(0, at)),
          writes.slice(at)
        )
        expect(GraphState.appendMessageBatches([], writes)).toEqual(folded)
        expect(split).toEqual(folded)
      })
    )
  })

  it("messages: the reducer is the rule read literally, for any thread (duplicates included) and update", () => {
    // The rule, one message at a time: replace the first message with the same id, else append.
    const literal = (
      current: ReadonlyArray<GraphState.StateMessage>,
      update: ReadonlyArray<GraphState.StateMessage>
    ) => {
      const out = [...current]
      for (const m of update) {
        const at = m.id === undefined ? -1 : out.findIndex((c) => c.id === m.id)
        if (at >= 0) out[at] = m
        else out.push(m)
      }
      return out
    }
    const msg = fc.record(
      { id: fc.option(fc.constantFrom("a", "b", "c", "d", "e"), { nil: undefined }), v: fc.nat(9) },
      { requiredKeys: ["v"] }
    )
    fc.assert(
      fc.property(fc.array(msg, { maxLength: 12 }), fc.array(msg, { maxLength: 5 }), (current, update) => {
        expect(GraphState.appendMessages(current, update)).toEqual(literal(current, update))
      })
    )
  })

  it("messages: ids stay unique and every id ever sent is present, for any sequence", () => {
    const msg = fc.record({ id: fc.constantFrom("a", "b", "c", "d"), v: fc.nat(9) })
    fc.assert(
      fc.property(fc.array(fc.array(msg, { maxLength: 4 }), { maxLength: 6 }), (updates) => {
        let s = fresh()
        for (const u of updates) s = GraphState.apply(s, { messages: u })
        const ids = s.messages.map((m) => m.id)
        expect(new Set(ids).size).toBe(ids.length)
        expect(new Set(ids)).toEqual(new Set(updates.flat().map((m) => m.id)))
        // Each id holds the last value sent for it.
        for (const m of s.messages) expect(m).toEqual(updates.flat().findLast((u) => u.id === m.id))
      })
    )
  })

  it("userContext and mcpUcanContext.invocations are shallow-merged", () => {
    let s = GraphState.apply(fresh(), { userContext: { name: "Ada", lang: "en" } })
    s = GraphState.apply(s, { userContext: { lang: "fr" } })
    expect(s.userContext).toEqual({ name: "Ada", lang: "fr" })
    s = GraphState.apply(s, { mcpUcanContext: { invocations: { a: "1" } } })
    s = GraphState.apply(s, { mcpUcanContext: { invocations: { b: "2", a: "3" } } })
    expect(s.mcpUcanContext).toEqual({ invocations: { a: "3", b: "2" } })
    // An explicit undefined does not wipe a merged field.
    s = GraphState.apply(s, { mcpUcanContext: undefined, userContext: undefined as never })
    expect(s.mcpUcanContext).toEqual({ invocations: { a: "3", b: "2" } })
    expect(s.userContext).toEqual({ name: "Ada", lang: "fr" })
  })

  it("other fields: last write wins where the update has the key, untouched otherwise", () => {
    let s = GraphState.apply(fresh(), { spaceId: "s1", editorRoomId: "r1", currentEntityDid: "did:e" })
    s = GraphState.apply(s, { spaceId: "s2", client: "slack", userPreferences: { tone: "dry" } })
    expect(s.spaceId).toBe("s2")
    expect(s.editorRoomId).toBe("r1")
    expect(s.currentEntityDid).toBe("did:e")
    expect(s.client).toBe("slack")
    expect(s.userPreferences).toEqual({ tone: "dry" })
    s = GraphState.apply(s, { editorRoomId: undefined, browserTools: [], agActions: [] })
    expect(s.editorRoomId).toBeUndefined()
    expect(s.browserTools).toEqual([])
    s = GraphState.apply(s, { config: { did: "did:key:bob", wsId: "w" } })
    expect(s.config).toEqual({ did: "did:key:bob", wsId: "w" })
  })

  it("property: a last-write-wins field holds exactly the last value written, never a blend of two", () => {
    const tool = fc.record({
      name: fc.string(),
      description: fc.string(),
      schema: fc.constant({ type: "object" })
    })
    const values = {
      config: fc.record(
        { did: fc.string(), wsId: fc.option(fc.string(), { nil: undefined }) },
        { requiredKeys: ["did"] }
      ),
      client: fc.constantFrom("portal" as const, "matrix" as const, "slack" as const),
      editorRoomId: fc.option(fc.string(), { nil: undefined }),
      spaceId: fc.option(fc.string(), { nil: undefined }),
      currentEntityDid: fc.option(fc.string(), { nil: undefined }),
      browserTools: fc.array(tool, { maxLength: 3 }),
      agActions: fc.array(tool, { maxLength: 3 }),
      userPreferences: fc.dictionary(fc.string(), fc.string(), { maxKeys: 3 })
    }
    for (const [field, arbitrary] of Object.entries(values)) {
      fc.assert(
        fc.property(
          arbitrary as fc.Arbitrary<unknown>,
          arbitrary as fc.Arbitrary<unknown>,
          (first, second) => {
            const s = GraphState.apply(GraphState.apply(fresh(), { [field]: first }), { [field]: second })
            expect((s as unknown as Record<string, unknown>)[field]).toEqual(second)
          }
        ),
        { numRuns: 50 }
      )
    }
  })

  it("ignores keys that are not fields of the state and never mutates its input", () => {
    const s0 = fresh()
    const frozen = JSON.stringify(s0)
    const s1 = GraphState.apply(s0, { loadedPlugins: ["weather"], bogus: 1 } as never)
    expect(JSON.stringify(s0)).toBe(frozen)
    expect("bogus" in s1).toBe(false)
    expect(s1.loadedPlugins).toEqual(["weather"])
  })

  it("has a reducer for every channel of docs/spec/graph-state.md", () => {
    expect(Object.keys(GraphState.reducers).sort()).toEqual(
      [
        "messages",
        "config",
        "client",
        "editorRoomId",
        "spaceId",
        "currentEntityDid",
        "browserTools",
        "agActions",
        "userContext",
        "mcpUcanContext",
        "userPreferences",
        "loadedPlugins"
      ].sort()
    )
  })

  it("two threads never see each other's loads", () => {
    const load = fc.tuple(
      fc.constantFrom("A", "B"),
      fc.array(fc.constantFrom("weather", "maps", "mail", "lab"), { maxLength: 3 })
    )
    fc.assert(
      fc.property(fc.array(load, { maxLength: 20 }), (ops) => {
        const threads = { A: fresh(), B: fresh() }
        for (const [t, names] of ops) threads[t] = GraphState.apply(threads[t], { loadedPlugins: names })
        for (const t of ["A", "B"] as const) {
          const own = new Set(ops.filter(([o]) => o === t).flatMap(([, n]) => n))
          expect(new Set(threads[t].loadedPlugins)).toEqual(own)
        }
      })
    )
  })
})

describe("GraphState plugin writes", () => {
  const from = { plugin: "memory", hook: "beforeModel" }
  const check = (value: unknown) => GraphState.checkPluginUpdate(value, from)

  it("accepts nothing, or the fields plugins own with values of their types", () => {
    expect(check(undefined)).toEqual(Either.right({}))
    expect(check(null)).toEqual(Either.right({}))
    const update = {
      userContext: { name: "Ada" },
      userPreferences: { units: "metric" },
      editorRoomId: "!room",
      spaceId: undefined,
      currentEntityDid: "did:ixo:entity"
    }
    expect(check(update)).toEqual(Either.right(update))
  })

  it("refuses a field the runtime or the client owns, and a value of the wrong type, naming plugin and hook", () => {
    expect(check({ loadedPlugins: ["weather"] })).toEqual(
      Either.left(
        "Plugin 'memory' beforeModel returned a state update for 'loadedPlugins', which plugins cannot write (writable: userContext, userPreferences, editorRoomId, spaceId, currentEntityDid)."
      )
    )
    for (const field of [
      "messages",
      "config",
      "client",
      "mcpUcanContext",
      "browserTools",
      "agActions",
      "other"
    ]) {
      expect(Either.isLeft(check({ [field]: undefined }))).toBe(true)
    }
    expect(check({ userContext: "Ada" })).toEqual(
      Either.left("Plugin 'memory' beforeModel returned 'userContext' as string; it must be an object.")
    )
    expect(check({ userContext: undefined })).toEqual(
      Either.left("Plugin 'memory' beforeModel returned 'userContext' as undefined; it must be an object.")
    )
    expect(check({ spaceId: 7 })).toEqual(
      Either.left(
        "Plugin 'memory' beforeModel returned 'spaceId' as number; it must be a string or undefined."
      )
    )
    expect(check([])).toEqual(
      Either.left(
        "Plugin 'memory' beforeModel returned an array; return nothing or an object of state fields."
      )
    )
  })

  it("property: never throws, and what it accepts applies to any state without touching runtime fields", () => {
    const state = GraphState.initial({ did: "did:key:z", client: "portal" })
    fc.assert(
      fc.property(
        fc.oneof(fc.anything(), fc.record({ userContext: fc.dictionary(fc.string(), fc.jsonValue()) })),
        (value) => {
          const checked = check(value)
          if (Either.isLeft(checked)) return
          const next = GraphState.apply(state, checked.right)
          expect(next.messages).toBe(state.messages)
          expect(next.loadedPlugins).toBe(state.loadedPlugins)
          expect(next.config).toBe(state.config)
        }
      )
    )
  })

  it("combines one call's updates in order: userContext merged, the other fields last write wins", () => {
    expect(
      GraphState.combinePluginUpdates([
        { userContext: { name: "Ada", lang: "en" }, spaceId: "a" },
        { userContext: { lang: "fr" }, spaceId: "b", editorRoomId: "!r" }
      ])
    ).toEqual({ userContext: { name: "Ada", lang: "fr" }, spaceId: "b", editorRoomId: "!r" })
    expect(GraphState.combinePluginUpdates([])).toEqual({})
  })
})
