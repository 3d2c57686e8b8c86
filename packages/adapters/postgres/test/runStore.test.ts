/**
 * The RunStore conformance suite on Postgres, each case on a fresh schema: with its own
 * wake-ups (`pg_notify` to a `LISTEN` connection) and, when Redis is there too, with the Redis
 * `RunFanout` as the host composes them under `REDIS_URL`. Then two hosts' stores on one schema:
 * a follower on B follows live, to its end, a run that A appends to, by wake-ups alone (its poll
 * is a minute away), through either path.
 */
import { Clock, type RunStore } from "@plugboard/core"
import { makeRunFanout } from "@plugboard/redis"
import { RunStoreConformance } from "@plugboard/testing"
import { Chunk, Effect, Fiber, Layer, Queue, type Scope, Stream } from "effect"
import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import {
  connection,
  deleteKeys,
  freshPrefix,
  SKIP_REASON as REDIS_SKIP_REASON,
  REDIS_URL
} from "../../redis/test/helpers.js"
import { layerRunStore, makeRunStore } from "../src/index.js"
import { channelOf } from "../src/PostgresRunStore.js"
import { database, databaseLayer, dropSchemas, freshSchema, POSTGRES_URL, SKIP_REASON } from "./helpers.js"

const ALICE = "did:key:z6MkAlice"

/** Host A appends three messages and ends; a follower on host B collects the run from frame 0. */
const followAcrossHosts = (fanouts?: () => Effect.Effect<RunStore.FrameFanout, never, Scope.Scope>) =>
  Effect.scoped(
    Effect.gen(function* () {
      const schema = freshSchema()
      const host = (db: Effect.Effect.Success<ReturnType<typeof database>>) =>
        Effect.flatMap(fanouts === undefined ? Effect.succeed(undefined) : fanouts(), (fanout) =>
          makeRunStore(db, { pollMs: 60_000, ...(fanout === undefined ? {} : { fanout }) })
        )
      const a = yield* host(yield* database(schema))
      const b = yield* host(yield* database(schema))
      yield* a.create({ runId: "r", sessionId: "s", did: ALICE, requestId: "q" })
      yield* a.start(ALICE, "r")
      yield* a.append(ALICE, "r", { event: "message", data: { content: "one " } })
      // Each append waits until the follower has seen the frame before it, so it is waiting
      // again (its poll a minute away): only a wake-up can bring it the next one.
      const seen = yield* Queue.unbounded<number>()
      const follower = yield* Effect.fork(
        Stream.runCollect(Stream.tap(b.follow(ALICE, "r", 0), (f) => Queue.offer(seen, f.id)))
      )
      expect(yield* Queue.take(seen)).toBe(1)
      yield* a.append(ALICE, "r", { event: "message", data: { content: "two " } })
      expect(yield* Queue.take(seen)).toBe(2)
      yield* a.append(ALICE, "r", { event: "message", data: { content: "three" } })
      yield* a.end(ALICE, "r", { status: "finished" })
      const frames = Chunk.toReadonlyArray(
        yield* Fiber.join(follower).pipe(
          Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => "not woken" })
        )
      )
      expect(frames.map((f) => [f.id, f.event])).toEqual([
        [1, "message"],
        [2, "message"],
        [3, "message"],
        [4, "done"]
      ])
    })
  ).pipe(Effect.provide(Clock.layer), Effect.runPromise)

// Skipped, with the reason in its title, when the service is not up.
describe.skipIf(POSTGRES_URL === undefined)(
  POSTGRES_URL === undefined ? `Postgres RunStore: ${SKIP_REASON}` : "Postgres RunStore",
  () => {
    afterAll(dropSchemas)
    RunStoreConformance.run("postgres", () => layerRunStore().pipe(Layer.provide(databaseLayer())), {
      numRuns: 25
    })
    it(
      "a follower on another host is woken by pg_notify, and sees every frame once, to done",
      () => followAcrossHosts(),
      30_000
    )
    it("an appendAll announces once, with the id of its last frame", async () => {
      const schema = freshSchema()
      const listener = new pg.Client({ connectionString: POSTGRES_URL })
      await listener.connect()
      const heard: Array<string> = []
      listener.on("notification", (n) => heard.push(n.payload ?? ""))
      try {
        await listener.query(`LISTEN ${channelOf(schema)}`)
        await Effect.scoped(
          Effect.gen(function* () {
            const store = yield* makeRunStore(yield* database(schema), { pollMs: 60_000 })
            yield* store.create({ runId: "r", sessionId: "s", did: ALICE, requestId: "q", status: "running" })
            const frames = yield* store.appendAll(
              ALICE,
              "r",
              ["one ", "two ", "three"].map((content) => ({ event: "message", data: { content } }))
            )
            expect(frames.map((f) => f.id)).toEqual([1, 2, 3])
            yield* store.end(ALICE, "r", { status: "finished" })
          })
        ).pipe(Effect.provide(Clock.layer), Effect.runPromise)
        // Notifications reach a listener in commit order: one sent after the store's commits is a
        // fence, and every notification of theirs (an extra one too) has arrived before it.
        const fenced = new Promise<void>((resolve) =>
          listener.on("notification", (n) => n.payload === "fence" && resolve())
        )
        await listener.query("SELECT pg_notify($1, 'fence')", [channelOf(schema)])
        await fenced
        expect(heard.map((payload) => payload.split(" ")[0])).toEqual(["3", "4", "fence"])
      } finally {
        await listener.end()
      }
    }, 30_000)

    // Skipped, with the reason in its title, when the service is not up.
    describe.skipIf(REDIS_URL === undefined)(
      REDIS_URL === undefined
        ? `Postgres RunStore with Redis fan-out: ${REDIS_SKIP_REASON}`
        : "Postgres RunStore with Redis fan-out",
      () => {
        afterAll(deleteKeys)
        RunStoreConformance.run(
          "postgres with Redis fan-out",
          () =>
            Layer.unwrapScoped(
              Effect.map(Effect.flatMap(connection(), makeRunFanout), (fanout) =>
                layerRunStore({ fanout }).pipe(Layer.provide(databaseLayer()))
              )
            ),
          { numRuns: 25 }
        )
        it("with Redis fan-out, a follower on another host is woken through Redis, and sees every frame once, to done", () => {
          const prefix = freshPrefix()
          return followAcrossHosts(() => Effect.flatMap(connection(prefix), makeRunFanout))
        }, 30_000)
      }
    )
  }
)
