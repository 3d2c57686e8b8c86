/**
 * The shared conformance suite of the `ConnectionStore` port: the in-memory store in core, SQLite
 * in `@plugboard/sqlite`, Postgres in `@plugboard/postgres`. At the top level of a test file:
 *
 * ```ts
 * ConnectionStoreConformance.run("memory", () => ConnectionStore.layerMemory)
 * ```
 *
 * The factory is called once per test (and per property run) and must return a fresh, empty
 * store; its layer may be scoped. What it checks: a record reads back as written, users and
 * servers are independent (one user's records are never another's), put replaces, remove forgets,
 * list names a user's servers in order, concurrent writes to different slots all survive, and bad
 * input is refused before anything is stored (docs/oauth.md#at-rest); `compareAndSet` applies
 * only over the record named, of concurrent ones over one record exactly one applies, and no
 * interleaving of conditional writes loses the last one applied (docs/oauth.md#several-hosts).
 */
import { ConnectionStore as Store } from "@plugboard/core"
import { Effect, Exit, type Layer } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

/** Builds the store under test; called once per test. */
export type ConnectionStoreFactory = () => Layer.Layer<Store.ConnectionStore, unknown>

/** Options of the suite. */
export interface ConnectionStoreConformanceOptions {
  /** fast-check runs of the property (default 30). */
  readonly numRuns?: number
}

const runWith = <A>(
  factory: ConnectionStoreFactory,
  program: Effect.Effect<A, unknown, Store.ConnectionStore>
): Promise<A> =>
  Effect.runPromise(Effect.scoped(Effect.provide(program, factory())) as Effect.Effect<A, unknown>)

const store = Store.ConnectionStore
const ALICE = "did:key:z6MkAlice"
const BOB = "did:key:z6MkBob"
const USERS = [ALICE, BOB, "did:key:z6MkCarol"] as const
const SERVERS = ["github", "linear", "notion"] as const

const reasonOf = <A>(exit: Exit.Exit<A, Store.ConnectionStoreError>): string =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail"
    ? exit.cause.error.reason
    : `no typed failure: ${exit._tag}`

/** Registers the ConnectionStore conformance suite under `name` (vitest `describe`/`it`). */
export const run = (
  name: string,
  factory: ConnectionStoreFactory,
  options: ConnectionStoreConformanceOptions = {}
): void => {
  const numRuns = options.numRuns ?? 30
  const test = (title: string, program: Effect.Effect<void, unknown, Store.ConnectionStore>) =>
    it(title, () => runWith(factory, program))

  describe(`ConnectionStore conformance: ${name}`, () => {
    test(
      "nothing stored reads as undefined, lists empty, removes as false",
      Effect.gen(function* () {
        const s = yield* store
        expect(yield* s.get(ALICE, "github")).toBeUndefined()
        expect(yield* s.list(ALICE)).toEqual([])
        expect(yield* s.remove(ALICE, "github")).toBe(false)
      })
    )

    test(
      "a record reads back as written; put replaces; remove forgets",
      Effect.gen(function* () {
        const s = yield* store
        yield* s.put(ALICE, "github", "sealed-1", 1000)
        expect(yield* s.get(ALICE, "github")).toEqual({
          server: "github",
          sealed: "sealed-1",
          updatedAtMs: 1000
        })
        yield* s.put(ALICE, "github", "sealed-2", 2000)
        expect(yield* s.get(ALICE, "github")).toEqual({
          server: "github",
          sealed: "sealed-2",
          updatedAtMs: 2000
        })
        expect(yield* s.remove(ALICE, "github")).toBe(true)
        expect(yield* s.get(ALICE, "github")).toBeUndefined()
        expect(yield* s.remove(ALICE, "github")).toBe(false)
      })
    )

    test(
      "users are independent: one user's record is never another's, and removing it leaves the other's",
      Effect.gen(function* () {
        const s = yield* store
        yield* s.put(ALICE, "github", "alice-secret", 1)
        expect(yield* s.get(BOB, "github")).toBeUndefined()
        expect(yield* s.list(BOB)).toEqual([])
        yield* s.put(BOB, "github", "bob-secret", 2)
        expect((yield* s.get(ALICE, "github"))?.sealed).toBe("alice-secret")
        expect(yield* s.remove(BOB, "github")).toBe(true)
        expect((yield* s.get(ALICE, "github"))?.sealed).toBe("alice-secret")
      })
    )

    test(
      "list names the user's servers in order, with when each was written",
      Effect.gen(function* () {
        const s = yield* store
        yield* s.put(ALICE, "notion", "n", 3)
        yield* s.put(ALICE, "github", "g", 1)
        yield* s.put(ALICE, "linear", "l", 2)
        yield* s.put(BOB, "zeta", "z", 9)
        expect((yield* s.list(ALICE)).map((r) => [r.server, r.updatedAtMs])).toEqual([
          ["github", 1],
          ["linear", 2],
          ["notion", 3]
        ])
      })
    )

    test(
      "text of any kind survives: unicode, quotes, NUL, a long record",
      Effect.gen(function* () {
        const s = yield* store
        const texts = ["é\u0000'\"\\;--", "x".repeat(Store.MAX_SEALED_LENGTH), "🔑 v1.abc"]
        for (const [i, text] of texts.entries()) {
          yield* s.put(ALICE, `server-${i}`, text, i)
          expect((yield* s.get(ALICE, `server-${i}`))?.sealed).toBe(text)
        }
        // A DID with a NUL or a quote is still one user, distinct from its neighbours.
        yield* s.put("did:x:a\u0000'b", "github", "odd", 1)
        expect((yield* s.get("did:x:a\u0000'b", "github"))?.sealed).toBe("odd")
        expect(yield* s.get("did:x:a", "github")).toBeUndefined()
      })
    )

    test(
      "bad input is refused as invalid, and nothing is stored",
      Effect.gen(function* () {
        const s = yield* store
        for (const user of ["", 3, null, "d".repeat(Store.MAX_USER_LENGTH + 1)]) {
          expect(reasonOf(yield* Effect.exit(s.get(user as never, "github")))).toBe("invalid")
          expect(reasonOf(yield* Effect.exit(s.put(user as never, "github", "x", 1)))).toBe("invalid")
          expect(reasonOf(yield* Effect.exit(s.list(user as never)))).toBe("invalid")
        }
        for (const server of ["GitHub", "", "a b", "../x", 7]) {
          expect(reasonOf(yield* Effect.exit(s.get(ALICE, server as never)))).toBe("invalid")
          expect(reasonOf(yield* Effect.exit(s.put(ALICE, server as never, "x", 1)))).toBe("invalid")
          expect(reasonOf(yield* Effect.exit(s.remove(ALICE, server as never)))).toBe("invalid")
        }
        for (const [sealed, at] of [
          ["", 1],
          ["x".repeat(Store.MAX_SEALED_LENGTH + 1), 1],
          [5, 1],
          ["x", -1],
          ["x", 1.5],
          ["x", Number.NaN]
        ] as const) {
          expect(reasonOf(yield* Effect.exit(s.put(ALICE, "github", sealed as never, at)))).toBe("invalid")
        }
        expect(yield* s.list(ALICE)).toEqual([])
      })
    )

    test(
      "concurrent writes to different slots all survive",
      Effect.gen(function* () {
        const s = yield* store
        const slots = Array.from({ length: 16 }, (_, i) => ({ user: USERS[i % 3]!, server: `srv-${i}` }))
        yield* Effect.forEach(slots, ({ user, server }) => s.put(user, server, `${user}/${server}`, 1), {
          concurrency: "unbounded"
        })
        for (const { user, server } of slots) {
          expect((yield* s.get(user, server))?.sealed).toBe(`${user}/${server}`)
        }
      })
    )

    test(
      "compareAndSet applies only over the record it names (none, or its sealed text)",
      Effect.gen(function* () {
        const s = yield* store
        const at = (sealed: string, updatedAtMs: number) => ({ sealed, updatedAtMs })
        expect(yield* s.compareAndSet(ALICE, "github", undefined, undefined)).toBe(true)
        expect(yield* s.compareAndSet(ALICE, "github", "v0", at("v1", 1))).toBe(false)
        expect(yield* s.get(ALICE, "github")).toBeUndefined()
        expect(yield* s.compareAndSet(ALICE, "github", undefined, at("v1", 1))).toBe(true)
        expect(yield* s.compareAndSet(ALICE, "github", undefined, at("v1b", 1))).toBe(false)
        expect(yield* s.compareAndSet(ALICE, "github", undefined, undefined)).toBe(false)
        expect(yield* s.compareAndSet(ALICE, "github", "v1", at("v2", 2))).toBe(true)
        expect(yield* s.get(ALICE, "github")).toEqual({ server: "github", sealed: "v2", updatedAtMs: 2 })
        // A writer that read v1 is told its write did not apply, and nothing changes.
        expect(yield* s.compareAndSet(ALICE, "github", "v1", at("v3", 3))).toBe(false)
        expect(yield* s.compareAndSet(ALICE, "github", "v1", undefined)).toBe(false)
        expect(yield* s.get(ALICE, "github")).toEqual({ server: "github", sealed: "v2", updatedAtMs: 2 })
        // Another user's or server's record of the same text is another record.
        expect(yield* s.compareAndSet(BOB, "github", "v2", at("x", 4))).toBe(false)
        expect(yield* s.compareAndSet(ALICE, "linear", "v2", undefined)).toBe(false)
        expect(yield* s.compareAndSet(ALICE, "github", "v2", undefined)).toBe(true)
        expect(yield* s.get(ALICE, "github")).toBeUndefined()
        expect(yield* s.list(ALICE)).toEqual([])
      })
    )

    test(
      "compareAndSet refuses bad input as invalid, and nothing is stored",
      Effect.gen(function* () {
        const s = yield* store
        const cases: ReadonlyArray<readonly [unknown, unknown, unknown, unknown]> = [
          ["", "github", undefined, { sealed: "x", updatedAtMs: 1 }],
          [ALICE, "GitHub", undefined, { sealed: "x", updatedAtMs: 1 }],
          [ALICE, "github", 7, { sealed: "x", updatedAtMs: 1 }],
          [ALICE, "github", undefined, { sealed: "", updatedAtMs: 1 }],
          [ALICE, "github", undefined, { sealed: "x", updatedAtMs: -1 }],
          [ALICE, "github", undefined, { sealed: "x".repeat(Store.MAX_SEALED_LENGTH + 1), updatedAtMs: 1 }],
          [ALICE, "github", undefined, "x"],
          [ALICE, "github", undefined, null]
        ]
        for (const [user, server, expected, next] of cases) {
          const exit = yield* Effect.exit(
            s.compareAndSet(user as never, server as never, expected as never, next as never)
          )
          expect(reasonOf(exit)).toBe("invalid")
        }
        expect(yield* s.list(ALICE)).toEqual([])
      })
    )

    test(
      "of concurrent compareAndSets over one record, exactly one applies, and it is what is read",
      Effect.gen(function* () {
        const s = yield* store
        yield* s.put(ALICE, "github", "v0", 1)
        const texts = Array.from({ length: 12 }, (_, i) => `writer-${i}`)
        const applied = yield* Effect.forEach(
          texts,
          (text) => s.compareAndSet(ALICE, "github", "v0", { sealed: text, updatedAtMs: 2 }),
          { concurrency: "unbounded" }
        )
        const winners = texts.filter((_, i) => applied[i])
        expect(winners).toHaveLength(1)
        expect((yield* s.get(ALICE, "github"))?.sealed).toBe(winners[0])
        // The same from none: exactly one creates the record.
        const created = yield* Effect.forEach(
          texts,
          (text) => s.compareAndSet(BOB, "github", undefined, { sealed: text, updatedAtMs: 2 }),
          { concurrency: "unbounded" }
        )
        expect(created.filter(Boolean)).toHaveLength(1)
        expect((yield* s.get(BOB, "github"))?.sealed).toBe(texts[created.indexOf(true)])
      })
    )

    it("interleaved writers' conditional writes never lose the last one applied (property)", () =>
      fc.assert(
        fc.asyncProperty(
          fc.array(
            fc.record({
              op: fc.constantFrom("read", "read", "write", "write", "remove"),
              writer: fc.nat({ max: 2 }),
              server: fc.constantFrom("github", "linear")
            }),
            { maxLength: 25 }
          ),
          (ops) =>
            runWith(
              factory,
              Effect.gen(function* () {
                const s = yield* store
                // What the store holds (the last write applied), and what each writer last read.
                const model = new Map<string, string>()
                const seen = new Map<string, string | undefined>()
                for (const [i, { op, writer, server }] of ops.entries()) {
                  const key = `${writer} ${server}`
                  if (op === "read") {
                    const read = (yield* s.get(ALICE, server))?.sealed
                    expect(read).toBe(model.get(server))
                    seen.set(key, read)
                    continue
                  }
                  const expected = seen.get(key)
                  // Each write is a new text, as each seal is (a fresh IV).
                  const next = op === "write" ? { sealed: `w${writer}-${i}`, updatedAtMs: i } : undefined
                  const applied = yield* s.compareAndSet(ALICE, server, expected, next)
                  expect(applied).toBe(model.get(server) === expected)
                  if (applied) {
                    if (next === undefined) model.delete(server)
                    else model.set(server, next.sealed)
                  }
                  seen.set(key, applied ? next?.sealed : expected)
                }
                for (const server of ["github", "linear"]) {
                  expect((yield* s.get(ALICE, server))?.sealed).toBe(model.get(server))
                }
              })
            )
        ),
        { numRuns }
      ))

    it("a random sequence of puts and removes reads as a map of (user, server) (property)", () =>
      fc.assert(
        fc.asyncProperty(
          fc.array(
            fc.record({
              op: fc.constantFrom("put", "remove"),
              user: fc.constantFrom(...USERS),
              server: fc.constantFrom(...SERVERS),
              text: fc.string({ minLength: 1, maxLength: 20 })
            }),
            { maxLength: 15 }
          ),
          (ops) =>
            runWith(
              factory,
              Effect.gen(function* () {
                const s = yield* store
                const model = new Map<string, string>()
                for (const [i, { op, user, server, text }] of ops.entries()) {
                  const key = `${user} ${server}`
                  if (op === "put") {
                    yield* s.put(user, server, text, i)
                    model.set(key, text)
                  } else {
                    expect(yield* s.remove(user, server)).toBe(model.delete(key))
                  }
                }
                for (const user of USERS) {
                  for (const server of SERVERS) {
                    expect((yield* s.get(user, server))?.sealed).toBe(model.get(`${user} ${server}`))
                  }
                  const listed = (yield* s.list(user)).map((r) => r.server)
                  expect(listed).toEqual(SERVERS.filter((server) => model.has(`${user} ${server}`)))
                }
              })
            )
        ),
        { numRuns }
      ))
  })
}
