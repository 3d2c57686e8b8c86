/**
 * The shared conformance suite of the `SessionStore` port. Every implementation (the in-memory
 * twin in core, the per-user SQLite store in adapters) runs this same suite, so they cannot
 * drift apart. Call it at the top level of a vitest test file:
 *
 * ```ts
 * sessionStoreConformance("memory", () => SessionStore.layerMemory)
 * ```
 *
 * The factory is called once per test and must return a fresh, empty store; its layer may be
 * scoped (the suite closes the scope after each test). Time is the `Clock` port's test clock,
 * provided by the suite, so the factory's layer should take `Clock` from its context.
 */
import { Clock, SessionStore as SS } from "@plugboard/core"
import { Effect, Exit, Layer } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"

const T0 = Date.UTC(2025, 0, 1)

type Env = SS.SessionStore | Clock.Clock | Clock.TestControl

/** Builds the store under test from the suite's `Clock`; called once per test. */
export type SessionStoreFactory = () => Layer.Layer<SS.SessionStore, unknown, Clock.Clock>

const run = <A>(factory: SessionStoreFactory, program: Effect.Effect<A, unknown, Env>): Promise<A> =>
  Effect.runPromise(
    Effect.scoped(
      Effect.provide(program, Layer.provideMerge(factory(), Clock.layerTest(T0))) as Effect.Effect<A, unknown>
    )
  )

const store = SS.SessionStore
const advance = (ms: number) => Effect.flatMap(Clock.TestControl, (c) => c.advance(ms))

/** Fails the test unless `effect` fails with a `SessionStoreError` of `reason`. */
const expectReason = <A>(
  effect: Effect.Effect<A, SS.SessionStoreError, Env>,
  reason: SS.SessionStoreErrorReason
) =>
  Effect.gen(function* () {
    const exit = yield* Effect.exit(effect)
    if (Exit.isSuccess(exit)) expect.fail(`expected a ${reason} failure, got ${JSON.stringify(exit.value)}`)
    const failure = Exit.isFailure(exit) ? exit.cause : undefined
    const error = failure && failure._tag === "Fail" ? failure.error : undefined
    expect(error, `expected a typed failure, got ${String(failure)}`).toBeInstanceOf(SS.SessionStoreError)
    expect((error as SS.SessionStoreError).reason).toBe(reason)
  })

/** Registers the SessionStore conformance suite under `name` (vitest `describe`/`it`). */
export const sessionStoreConformance = (name: string, factory: SessionStoreFactory): void => {
  const test = (title: string, program: Effect.Effect<void, unknown, Env>) =>
    it(title, () => run(factory, program))

  describe(`SessionStore conformance: ${name}`, () => {
    test(
      "create stamps times from the Clock and fills defaults",
      Effect.gen(function* () {
        const s = yield* store
        const created = yield* s.create("did:key:alice", { sessionId: "s1" })
        expect(created).toEqual({
          sessionId: "s1",
          title: SS.DEFAULT_TITLE,
          createdAt: new Date(T0).toISOString(),
          lastUpdatedAt: new Date(T0).toISOString(),
          oracleName: undefined,
          oracleDid: undefined,
          lastProcessedCount: 0,
          userContext: undefined
        })
        expect(yield* s.get("did:key:alice", "s1")).toEqual(created)
        expect(yield* s.get("did:key:alice", "nope")).toBeUndefined()
      })
    )

    test(
      "create keeps every given field",
      Effect.gen(function* () {
        const s = yield* store
        const input = {
          sessionId: "s-ü-🙂",
          title: "Weather in Lisbon",
          oracleName: "Guru",
          oracleDid: "did:key:oracle",
          userContext: { name: "Alice", prefs: { units: "metric", tags: ["a", 1, null] } }
        }
        const created = yield* s.create("did:key:alice", input)
        expect(created).toMatchObject(input)
        expect(yield* s.get("did:key:alice", input.sessionId)).toEqual(created)
      })
    )

    test(
      "create refuses an existing id; ensure returns it untouched",
      Effect.gen(function* () {
        const s = yield* store
        const first = yield* s.create("did:key:alice", { sessionId: "s1", title: "first" })
        yield* advance(1000)
        yield* expectReason(s.create("did:key:alice", { sessionId: "s1", title: "second" }), "already-exists")
        const ensured = yield* s.ensure("did:key:alice", { sessionId: "s1", title: "third" })
        expect(ensured).toEqual({ session: first, created: false })
        const fresh = yield* s.ensure("did:key:alice", { sessionId: "s2", title: "new" })
        expect(fresh.created).toBe(true)
        expect(fresh.session.title).toBe("new")
        expect(fresh.session.createdAt).toBe(new Date(T0 + 1000).toISOString())
      })
    )

    test(
      "concurrent ensure of one id creates exactly one session",
      Effect.gen(function* () {
        const s = yield* store
        const results = yield* Effect.all(
          Array.from({ length: 8 }, (_, i) =>
            s.ensure("did:key:alice", { sessionId: "same", title: `t${i}` })
          ),
          { concurrency: "unbounded" }
        )
        expect(results.filter((r) => r.created)).toHaveLength(1)
        const titles = new Set(results.map((r) => r.session.title))
        expect(titles.size).toBe(1)
        expect((yield* s.list("did:key:alice")).total).toBe(1)
      })
    )

    test(
      "update changes the given fields, null clears, absent keeps; lastUpdatedAt moves",
      Effect.gen(function* () {
        const s = yield* store
        yield* s.create("did:key:alice", {
          sessionId: "s1",
          title: "t",
          oracleName: "Guru",
          oracleDid: "did:key:o",
          userContext: { a: 1 }
        })
        yield* advance(5000)
        const updated = yield* s.update("did:key:alice", "s1", {
          title: "renamed",
          oracleName: null,
          lastProcessedCount: 7,
          userContext: { b: [2] }
        })
        expect(updated).toEqual({
          sessionId: "s1",
          title: "renamed",
          createdAt: new Date(T0).toISOString(),
          lastUpdatedAt: new Date(T0 + 5000).toISOString(),
          oracleName: undefined,
          oracleDid: "did:key:o",
          lastProcessedCount: 7,
          userContext: { b: [2] }
        })
        expect(yield* s.get("did:key:alice", "s1")).toEqual(updated)
        const cleared = yield* s.update("did:key:alice", "s1", { userContext: null, oracleDid: null })
        expect(cleared.userContext).toBeUndefined()
        expect(cleared.oracleDid).toBeUndefined()
        expect(cleared.lastProcessedCount).toBe(7)
      })
    )

    test(
      "touch moves lastUpdatedAt only; update/touch of a missing session is NotFound",
      Effect.gen(function* () {
        const s = yield* store
        const created = yield* s.create("did:key:alice", { sessionId: "s1" })
        yield* advance(42)
        const touched = yield* s.touch("did:key:alice", "s1")
        expect(touched).toEqual({ ...created, lastUpdatedAt: new Date(T0 + 42).toISOString() })
        yield* expectReason(s.touch("did:key:alice", "missing"), "not-found")
        yield* expectReason(s.update("did:key:alice", "missing", { title: "x" }), "not-found")
        yield* expectReason(s.touch("did:key:bob", "s1"), "not-found")
      })
    )

    test(
      "list orders by last activity, pages with limit/offset and reports the total",
      Effect.gen(function* () {
        const s = yield* store
        for (let i = 0; i < 7; i++) {
          yield* s.create("did:key:alice", { sessionId: `s${i}` })
          yield* advance(10)
        }
        yield* s.touch("did:key:alice", "s2")
        const all = yield* s.list("did:key:alice", { limit: 100 })
        expect(all.total).toBe(7)
        expect(all.sessions.map((x) => x.sessionId)).toEqual(["s2", "s6", "s5", "s4", "s3", "s1", "s0"])
        const pages: Array<string> = []
        for (let offset = 0; offset < 9; offset += 3) {
          const page = yield* s.list("did:key:alice", { limit: 3, offset })
          expect(page.total).toBe(7)
          pages.push(...page.sessions.map((x) => x.sessionId))
        }
        expect(pages).toEqual(all.sessions.map((x) => x.sessionId))
        expect(yield* s.list("did:key:alice", { offset: 50 })).toEqual({ sessions: [], total: 7 })
        expect(yield* s.list("did:key:nobody")).toEqual({ sessions: [], total: 0 })
        const def = yield* s.list("did:key:alice")
        expect(def.sessions).toHaveLength(Math.min(7, SS.DEFAULT_PAGE_SIZE))
      })
    )

    test(
      "equal times order by createdAt desc, then id by code point",
      Effect.gen(function* () {
        const s = yield* store
        // U+E000 sorts before an astral character by code point (SQLite's order), after it by
        // UTF-16 code unit (JavaScript's `<`): every store must use the former.
        for (const id of ["b", "\u{1F600}", "c", "\uE000", "a"]) {
          yield* s.create("did:key:alice", { sessionId: id })
        }
        const page = yield* s.list("did:key:alice")
        expect(page.sessions.map((x) => x.sessionId)).toEqual(["a", "b", "c", "\uE000", "\u{1F600}"])
      })
    )

    test(
      "delete removes the session and reports whether it existed",
      Effect.gen(function* () {
        const s = yield* store
        yield* s.create("did:key:alice", { sessionId: "s1" })
        yield* s.create("did:key:alice", { sessionId: "s2" })
        expect(yield* s.delete("did:key:alice", "s1")).toBe(true)
        expect(yield* s.delete("did:key:alice", "s1")).toBe(false)
        expect(yield* s.get("did:key:alice", "s1")).toBeUndefined()
        expect((yield* s.list("did:key:alice")).sessions.map((x) => x.sessionId)).toEqual(["s2"])
        const again = yield* s.create("did:key:alice", { sessionId: "s1" })
        expect(again.lastProcessedCount).toBe(0)
      })
    )

    test(
      "users are isolated, including hostile and look-alike DIDs",
      Effect.gen(function* () {
        const s = yield* store
        const dids = [
          "did:key:alice",
          "did:key:ALICE",
          "did:key:аlice", // Cyrillic а
          "did:key:alice\u0000",
          "../../etc/passwd",
          "/",
          "did:key:" + "z".repeat(5000)
        ]
        for (const [i, did] of dids.entries()) {
          yield* s.create(did, { sessionId: "shared-id", title: `owner ${i}` })
        }
        for (const [i, did] of dids.entries()) {
          const page = yield* s.list(did)
          expect(page.total).toBe(1)
          expect(page.sessions[0]?.title).toBe(`owner ${i}`)
        }
        expect(yield* s.delete(dids[1]!, "shared-id")).toBe(true)
        expect((yield* s.get(dids[0]!, "shared-id"))?.title).toBe("owner 0")
        expect((yield* s.get(dids[2]!, "shared-id"))?.title).toBe("owner 2")
      })
    )

    test(
      "stored user context is a copy, not the caller's object",
      Effect.gen(function* () {
        const s = yield* store
        const ctx = { nested: { n: 1 }, list: [1, 2] }
        yield* s.create("did:key:alice", { sessionId: "s1", userContext: ctx })
        ctx.nested.n = 99
        ctx.list.push(3)
        const got = yield* s.get("did:key:alice", "s1")
        expect(got?.userContext).toEqual({ nested: { n: 1 }, list: [1, 2] })
      })
    )

    test(
      "bad input fails InvalidInput and changes nothing",
      Effect.gen(function* () {
        const s = yield* store
        const alice = "did:key:alice"
        yield* s.create(alice, { sessionId: "ok" })
        const bad: Array<Effect.Effect<unknown, SS.SessionStoreError, Env>> = [
          s.create("", { sessionId: "x" }),
          s.create(alice, { sessionId: "" }),
          s.create(alice, { sessionId: "a\nb" }),
          // A path never becomes a session id (a path parameter arrives percent-decoded).
          s.create(alice, { sessionId: "../../../etc/passwd" }),
          s.create(alice, { sessionId: "a\\b" }),
          s.ensure(alice, { sessionId: ".." }),
          s.ensure(alice, { sessionId: "." }),
          s.create(alice, { sessionId: "x".repeat(SS.MAX_SESSION_ID_LENGTH + 1) }),
          s.create(alice, { sessionId: "x", title: 5 as unknown as string }),
          s.create(alice, { sessionId: "x", title: "t".repeat(SS.MAX_TITLE_LENGTH + 1) }),
          s.create(alice, { sessionId: "x", userContext: [1] as unknown as Record<string, unknown> }),
          s.create(alice, { sessionId: "x", userContext: { big: BigInt(1) } }),
          s.create(alice, { sessionId: "x", oracleDid: 3 as unknown as string }),
          s.ensure(alice, { sessionId: "" }),
          s.list(alice, { limit: 0 }),
          s.list(alice, { limit: SS.MAX_PAGE_SIZE + 1 }),
          s.list(alice, { limit: 1.5 }),
          s.list(alice, { offset: -1 }),
          s.update(alice, "ok", { lastProcessedCount: -1 }),
          s.update(alice, "ok", { lastProcessedCount: 2.5 }),
          s.update(alice, "ok", { title: null as unknown as string }),
          s.get(alice, ""),
          s.delete(alice, "\u0000")
        ]
        for (const effect of bad) yield* expectReason(effect, "invalid-input")
        const page = yield* s.list(alice)
        expect(page.total).toBe(1)
        expect(page.sessions[0]).toMatchObject({
          sessionId: "ok",
          title: SS.DEFAULT_TITLE,
          lastProcessedCount: 0
        })
      })
    )

    it("agrees with a model under random operation sequences", async () => {
      type Op =
        | {
            readonly kind: "create" | "ensure" | "touch" | "delete"
            readonly id: string
            readonly user: number
          }
        | { readonly kind: "advance"; readonly ms: number }
      const op: fc.Arbitrary<Op> = fc.oneof(
        fc.record({
          kind: fc.constantFrom("create" as const, "ensure" as const, "touch" as const, "delete" as const),
          id: fc.constantFrom("a", "b", "c", "d"),
          user: fc.integer({ min: 0, max: 1 })
        }),
        fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 3 }) })
      )
      await fc.assert(
        fc.asyncProperty(fc.array(op, { maxLength: 30 }), (ops) =>
          run(
            factory,
            Effect.gen(function* () {
              const s = yield* store
              const users = ["did:key:u0", "did:key:u1"] as const
              let now = T0
              const model = [new Map<string, [number, number]>(), new Map<string, [number, number]>()]
              for (const o of ops) {
                if (o.kind === "advance") {
                  yield* advance(o.ms)
                  now += o.ms
                  continue
                }
                const m = model[o.user]!
                const did = users[o.user]!
                const exists = m.has(o.id)
                if (o.kind === "create") {
                  const exit = yield* Effect.exit(s.create(did, { sessionId: o.id }))
                  expect(Exit.isSuccess(exit)).toBe(!exists)
                  if (!exists) m.set(o.id, [now, now])
                } else if (o.kind === "ensure") {
                  const r = yield* s.ensure(did, { sessionId: o.id })
                  expect(r.created).toBe(!exists)
                  if (!exists) m.set(o.id, [now, now])
                } else if (o.kind === "touch") {
                  const exit = yield* Effect.exit(s.touch(did, o.id))
                  expect(Exit.isSuccess(exit)).toBe(exists)
                  if (exists) m.set(o.id, [m.get(o.id)![0], now])
                } else {
                  expect(yield* s.delete(did, o.id)).toBe(exists)
                  m.delete(o.id)
                }
              }
              for (const [i, did] of users.entries()) {
                const expected = Array.from(model[i]!.entries())
                  .sort(([ia, [ca, ua]], [ib, [cb, ub]]) => ub - ua || cb - ca || (ia < ib ? -1 : 1))
                  .map(([id]) => id)
                const page = yield* s.list(did, { limit: 10 })
                expect(page.total).toBe(expected.length)
                expect(page.sessions.map((x) => x.sessionId)).toEqual(expected)
              }
            })
          )
        ),
        { numRuns: 40 }
      )
    })
  })
}
