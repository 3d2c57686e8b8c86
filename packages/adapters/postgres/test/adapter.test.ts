/**
 * What the Postgres adapter promises beyond the port suites (docs/deployment.md): a deduction is one
 * transaction across hosts, migrations are versioned and safe when hosts run them at once, a run
 * written on one host is followed live from another, and a dead server fails fast with the
 * port's typed error and no password in it. Two pools on one schema stand for two hosts.
 */
import { Clock, type CreditLedger, RunStore, SessionStore } from "@plugboard/core"
import { Chunk, Effect, Exit, Fiber, Option, Queue, Stream } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import {
  makeCheckpointer,
  makeCreditLedger,
  makeDatabase,
  makeRunStore,
  makeSessionStore,
  SCHEMA_VERSION
} from "../src/index.js"
import { database, dropSchemas, freshSchema, POSTGRES_URL, SKIP_REASON } from "./helpers.js"

const ALICE = "did:key:z6MkAlice"

const scoped = <A, E>(effect: Effect.Effect<A, E, import("effect").Scope.Scope | Clock.Clock>) =>
  Effect.runPromise(Effect.scoped(effect).pipe(Effect.provide(Clock.layer)))

const failureOf = <E>(exit: Exit.Exit<unknown, E>): E | undefined =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined

describe.skipIf(POSTGRES_URL === undefined)(
  `Postgres adapter${POSTGRES_URL === undefined ? `: ${SKIP_REASON}` : ""}`,
  () => {
    afterAll(dropSchemas)

    it("50 concurrent deductions over two hosts against 10 credits: exactly 10 succeed, the balance ends at 0", () =>
      scoped(
        Effect.gen(function* () {
          const schema = freshSchema()
          const a = yield* makeCreditLedger(yield* database(schema))
          const b = yield* makeCreditLedger(yield* database(schema))
          yield* a.topUp(ALICE, 10, "ten")
          const results = yield* Effect.all(
            Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? a : b).deduct(ALICE, 1, `turn ${i}`)),
            { concurrency: "unbounded" }
          )
          expect(results.filter((r) => r.charged === 1)).toHaveLength(10)
          expect(results.filter((r) => r.charged === 0 && r.shortfall === 1)).toHaveLength(40)
          expect(yield* a.balance(ALICE)).toBe(0)
          expect(yield* b.balance(ALICE)).toBe(0)
          const history = yield* b.history(ALICE, 100)
          expect(history).toHaveLength(51)
          // Each entry's balance follows from the one before it: no two deductions read the same balance.
          const balances = [...history].reverse().map((e) => e.balanceAfter)
          expect(balances.slice(0, 11)).toEqual([10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0])
          expect(balances.slice(11).every((x) => x === 0)).toBe(true)
        })
      ))

    it("migrations run by five hosts at once apply each version once, and running them again changes nothing", () =>
      scoped(
        Effect.gen(function* () {
          const schema = freshSchema()
          const hosts = yield* Effect.all(Array.from({ length: 5 }, () => database(schema)))
          yield* Effect.all(
            hosts.map((db) => db.ready),
            { concurrency: "unbounded" }
          )
          const again = yield* database(schema)
          yield* again.ready
          const rows = yield* Effect.promise(() =>
            hosts[0]!.pool.query<{ version: number }>(
              `SELECT version FROM "${schema}".schema_migrations ORDER BY version`
            )
          )
          expect(rows.rows.map((r) => r.version)).toEqual(
            Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1)
          )
          const lg = yield* Effect.promise(() =>
            hosts[0]!.pool.query<{ n: string }>(
              `SELECT count(*) AS n, count(DISTINCT v) AS d FROM "${schema}".checkpoint_migrations`
            )
          )
          expect(Number(lg.rows[0]!.n)).toBeGreaterThan(0)
          expect(lg.rows[0]).toMatchObject({ n: (lg.rows[0] as unknown as { d: string }).d })
        })
      ))

    it("a run appended on host A is followed live from host B (LISTEN/NOTIFY, not polling)", () =>
      scoped(
        Effect.gen(function* () {
          const schema = freshSchema()
          const a = yield* makeRunStore(yield* database(schema))
          // B polls only once a minute: frames must reach it through notifications.
          const b = yield* makeRunStore(yield* database(schema), { pollMs: 60_000 })
          yield* a.create({ runId: "r", sessionId: "s", did: ALICE, requestId: "q" })
          yield* a.start(ALICE, "r")
          yield* a.append(ALICE, "r", { event: "message", data: { content: "Hel" } })
          // Each write waits until B has seen the frame before it: B is waiting again, and only a
          // notification can bring it the next one.
          const seen = yield* Queue.unbounded<number>()
          const follower = yield* Effect.fork(
            Stream.runCollect(Stream.tap(b.follow(ALICE, "r", 0), (f) => Queue.offer(seen, f.id)))
          )
          expect(yield* Queue.take(seen)).toBe(1)
          yield* a.append(ALICE, "r", { event: "message", data: { content: "lo" } })
          expect(yield* Queue.take(seen)).toBe(2)
          yield* a.end(ALICE, "r", { status: "interrupted" })
          const frames = Chunk.toReadonlyArray(
            yield* Fiber.join(follower).pipe(
              Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => "late" })
            )
          )
          expect(frames.map((f) => f.id)).toEqual([1, 2, 3])
          expect(frames[2]).toEqual({
            id: 3,
            event: "done",
            data: { status: "interrupted", partialText: "Hello" }
          })
          const run = Option.getOrThrow(yield* b.get(ALICE, "r"))
          expect(run).toMatchObject({ status: "interrupted", lastFrameId: 3, partialText: "Hello" })
        })
      ))

    it("text Postgres cannot store as is (U+0000, quotes, backslashes) round-trips", () =>
      scoped(
        Effect.gen(function* () {
          const db = yield* database()
          const sessions = yield* makeSessionStore(db)
          const title = 'a\u0000b "quoted" \\ back\\slash \u{1F600}'
          yield* sessions.create(ALICE, { sessionId: "s", title, oracleName: "\u0000" })
          expect(yield* sessions.get(ALICE, "s")).toMatchObject({ title, oracleName: "\u0000" })
          const runs = yield* makeRunStore(db)
          yield* runs.create({ runId: "r", sessionId: "s", did: ALICE, requestId: "q" })
          yield* runs.append(ALICE, "r", { event: "message", data: { content: 'x\u0000"y\\' } })
          const done = yield* runs.end(ALICE, "r", { status: "failed" })
          expect(done.data).toEqual({ status: "failed", partialText: 'x\u0000"y\\' })
          const ledger = yield* makeCreditLedger(db)
          const up = yield* ledger.topUp(ALICE, 1, "why\u0000not")
          expect((yield* ledger.history(ALICE))[0]).toEqual(up.entry)
        })
      ))

    it("a dead server fails fast with each port's typed Unavailable error, and never shows the password", async () => {
      const secret = "s3cret-Pa55word"
      const url = `postgres://plugboard:${secret}@127.0.0.1:1/nowhere`
      const started = Date.now()
      const exits = await Effect.runPromise(
        Effect.scoped(
          Effect.gen(function* () {
            const db = yield* makeDatabase({ url, connectTimeoutMs: 2000 })
            const sessions = yield* makeSessionStore(db)
            const ledger = yield* makeCreditLedger(db)
            const runs = yield* makeRunStore(db)
            return [
              yield* Effect.exit(sessions.get(ALICE, "s")),
              yield* Effect.exit(ledger.balance(ALICE)),
              yield* Effect.exit(runs.get(ALICE, "r")),
              yield* Effect.exit(makeCheckpointer(db).forUser(ALICE))
            ] as const
          })
        ).pipe(Effect.provide(Clock.layer))
      )
      expect(Date.now() - started).toBeLessThan(5000)
      const [session, credit, run, saver] = exits.map((exit) =>
        failureOf(exit as Exit.Exit<unknown, unknown>)
      ) as [
        SessionStore.SessionStoreError,
        CreditLedger.CreditLedgerError,
        RunStore.RunStoreError,
        { _tag: string; reason: string; message: string }
      ]
      expect(session).toBeInstanceOf(SessionStore.SessionStoreError)
      expect(session.reason).toBe("unavailable")
      expect(credit).toMatchObject({ _tag: "CreditLedgerError", reason: "unavailable" })
      expect(run).toBeInstanceOf(RunStore.RunStoreError)
      expect(run.reason).toBe("unavailable")
      expect(saver).toMatchObject({ _tag: "CheckpointerError", reason: "unavailable" })
      for (const error of [session, credit, run, saver]) {
        expect(error.message).toContain("127.0.0.1:1")
        expect(error.message).toContain("ECONNREFUSED")
        expect(error.message).not.toContain(secret)
        expect(JSON.stringify(error)).not.toContain(secret)
        expect(String((error as { cause?: unknown }).cause ?? "")).not.toContain(secret)
      }
    })

    it("a wrong password is Unavailable, worded by the server, without the password", async () => {
      const good = new URL(POSTGRES_URL!)
      good.password = "not-the-Password-42"
      const exit = await Effect.runPromiseExit(
        Effect.scoped(
          Effect.flatMap(makeDatabase({ url: good.toString() }), (db) =>
            Effect.flatMap(makeSessionStore(db), (s) => s.list(ALICE))
          )
        ).pipe(Effect.provide(Clock.layer))
      )
      const error = failureOf(exit) as SessionStore.SessionStoreError
      expect(error.reason).toBe("unavailable")
      expect(error.message).toMatch(/password authentication failed/)
      expect(error.message).not.toContain("not-the-Password-42")
    })

    it("refuses a schema name that is not a plain identifier, a URL that is not postgres:// and a pool of one", async () => {
      for (const options of [
        { url: POSTGRES_URL!, schema: 'x"; DROP TABLE y; --' },
        { url: "mysql://u:topsecret@h/db" },
        // One connection would deadlock the migrations (they hold one, LangGraph's setup takes another).
        { url: POSTGRES_URL!, maxConnections: 1 }
      ]) {
        const exit = await Effect.runPromiseExit(Effect.scoped(makeDatabase(options)))
        const error = failureOf(exit)
        expect(error?._tag).toBe("PgFailure")
        expect(error?.message).not.toContain("topsecret")
      }
    })

    it("a user's saver never sees another user's threads, even when listing without a thread id", async () => {
      await scoped(
        Effect.gen(function* () {
          const checkpointer = makeCheckpointer(yield* database())
          const alice = yield* checkpointer.forUser(ALICE)
          const bob = yield* checkpointer.forUser("did:key:z6MkBob")
          const { conversationCheckpoint } = yield* Effect.promise(
            () => import("../../sqlite/test/helpers.js")
          )
          for (const [saver, thread] of [
            [alice, "a1"],
            [alice, "shared"],
            [bob, "shared"]
          ] as const) {
            yield* Effect.promise(() =>
              saver.put(
                { configurable: { thread_id: thread, checkpoint_ns: "" } },
                conversationCheckpoint(1, thread),
                { source: "loop", step: 1, parents: {} },
                {}
              )
            )
          }
          const listed = yield* Effect.promise(async () => {
            const out: Array<string> = []
            for await (const t of alice.list({ configurable: {} }))
              out.push(String(t.config.configurable?.thread_id))
            return out.sort()
          })
          expect(listed).toEqual(["a1", "shared"])
          const limited = yield* Effect.promise(async () => {
            const out: Array<string> = []
            for await (const t of bob.list({ configurable: {} }, { limit: 1 }))
              out.push(String(t.config.configurable?.thread_id))
            return out
          })
          expect(limited).toEqual(["shared"])
          yield* Effect.promise(() => bob.deleteThread("shared"))
          expect(
            yield* Effect.promise(() => bob.getTuple({ configurable: { thread_id: "shared" } }))
          ).toBeUndefined()
          expect(
            yield* Effect.promise(() => alice.getTuple({ configurable: { thread_id: "shared" } }))
          ).toBeDefined()
        })
      )
    })
  }
)
