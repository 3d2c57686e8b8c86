/**
 * The liveness rule of runs on a shared store (`RunLiveness.ts`): a run is alive while its host
 * holds its lease; an active run whose lease is free is ended `interrupted` by whoever finds it
 * (a read, the session's run lookup, the session's next run, a follower waiting on it). Checked
 * on the in-memory ports: two decorators over one store and one lock are two hosts.
 */
import { Clock, RunStore, TurnLock } from "@plugboard/core"
import { Effect, Option, Stream } from "effect"
import { describe, expect, it } from "vitest"
import { runLeaseKey, withLiveness } from "../src/RunLiveness.js"

const DID = "did:key:z6MkLiveness"
const TTL = 200

const engines = Effect.gen(function* () {
  const store = yield* RunStore.makeMemory
  const lock = yield* TurnLock.makeMemory({ pollMs: 5 })
  return { store, lock, hostA: withLiveness(store, lock, TTL), hostB: withLiveness(store, lock, TTL) }
})

const run = <A, E>(effect: Effect.Effect<A, E, Clock.Clock>) =>
  Effect.runPromise(Effect.provide(effect, Clock.layer))

/** A run as a host that died leaves it: running, with a partial answer, and nobody holding it. */
const orphan = (store: RunStore.RunStoreService, sessionId: string) =>
  Effect.gen(function* () {
    const r = yield* store.create({ did: DID, sessionId, requestId: "req" })
    yield* store.start(DID, r.runId)
    yield* store.append(DID, r.runId, { event: "message", data: { content: "Half an ans" } })
    return r.runId
  })

describe("run liveness", () => {
  it("a read of a run nobody holds ends it interrupted with its partial text; a held one is left alone", () =>
    run(
      Effect.gen(function* () {
        const { store, hostA, hostB } = yield* engines
        const dead = yield* orphan(store, "s1")
        const live = yield* hostA.create({ did: DID, sessionId: "s2", requestId: "req" })
        yield* hostA.start(DID, live.runId)

        const read = yield* hostB.get(DID, dead)
        expect(Option.getOrThrow(read).status).toBe("interrupted")
        const frames = yield* store.frames(DID, dead, 0)
        expect(frames.at(-1)).toMatchObject({
          event: "done",
          data: { status: "interrupted", reason: "host-lost", partialText: "Half an ans" }
        })
        // The live run, read from the other host, is running still.
        expect(Option.getOrThrow(yield* hostB.get(DID, live.runId)).status).toBe("running")
        expect(Option.getOrThrow(yield* hostB.activeForSession(DID, "s2")).runId).toBe(live.runId)
        // Ended by its host, it lets its lease go.
        yield* hostA.end(DID, live.runId, { status: "finished" })
        expect(Option.getOrThrow(yield* hostB.get(DID, live.runId)).status).toBe("finished")
      })
    ))

  it("an end with the run's last frames stores them before done and lets the lease go", () =>
    run(
      Effect.gen(function* () {
        const { store, lock, hostA } = yield* engines
        const live = yield* hostA.create({ did: DID, sessionId: "s1", requestId: "req", status: "running" })
        const done = yield* hostA.end(DID, live.runId, { status: "failed", reason: "turn-failed" }, [
          { event: "error", data: { error: "The turn failed." } }
        ])
        expect(done).toMatchObject({ id: 2, event: "done" })
        expect((yield* store.frames(DID, live.runId, 0)).map((f) => f.event)).toEqual(["error", "done"])
        const lease = yield* lock.acquire(runLeaseKey(DID, live.runId), { ttlMs: TTL, waitMs: 0 })
        yield* lease.release
      })
    ))

  it("the session's run lookup and the session's next run reap the orphan first", () =>
    run(
      Effect.gen(function* () {
        const { store, hostB } = yield* engines
        const first = yield* orphan(store, "s")
        expect(yield* hostB.activeForSession(DID, "s")).toEqual(Option.none())
        expect(Option.getOrThrow(yield* store.get(DID, first)).status).toBe("interrupted")

        const second = yield* orphan(store, "s")
        const next = yield* hostB.create({ did: DID, sessionId: "s", requestId: "next" })
        expect(Option.getOrThrow(yield* store.get(DID, second)).status).toBe("interrupted")
        expect(Option.getOrThrow(yield* store.get(DID, next.runId)).status).toBe("queued")
      })
    ))

  it("a run waiting for its session's turn lock is alive: only its own lease counts", () =>
    run(
      Effect.gen(function* () {
        const { lock, hostA, hostB } = yield* engines
        // Another turn holds the session; this run is queued behind it, on host A.
        const session = yield* lock.acquire(`${DID}\u0000s`, { ttlMs: 10_000 })
        const queued = yield* hostA.create({ did: DID, sessionId: "s", requestId: "req" })
        yield* hostA.start(DID, queued.runId)
        expect(Option.getOrThrow(yield* hostB.get(DID, queued.runId)).status).toBe("running")
        yield* session.release
        expect(Option.getOrThrow(yield* hostB.get(DID, queued.runId)).status).toBe("running")
        yield* hostA.end(DID, queued.runId, { status: "finished" })
      })
    ))

  it("a follower that joined while the dead host's lease still ran gets the done once it lapses", () =>
    run(
      Effect.gen(function* () {
        const { store, lock, hostB } = yield* engines
        const dead = yield* orphan(store, "s")
        // The host's last refresh, never renewed: it died.
        yield* lock.acquire(runLeaseKey(DID, dead), { ttlMs: TTL })
        const started = Date.now()
        const followed = yield* Stream.runCollect(hostB.follow(DID, dead, 0))
        expect(Date.now() - started).toBeGreaterThanOrEqual(TTL - 20)
        expect(Array.from(followed).at(-1)).toMatchObject({ event: "done", data: { status: "interrupted" } })
      })
    ))

  it("a lock that cannot be asked leaves the run running (alive until proven dead)", () =>
    run(
      Effect.gen(function* () {
        const { store } = yield* engines
        const down: TurnLock.TurnLockService = {
          acquire: () => Effect.fail(new TurnLock.TurnLockError({ reason: "unavailable", message: "down" })),
          refresh: () => Effect.void,
          isCurrent: () => Effect.succeed(false),
          release: () => Effect.succeed(false)
        }
        const host = withLiveness(store, down, TTL)
        const dead = yield* orphan(store, "s")
        expect(Option.getOrThrow(yield* host.get(DID, dead)).status).toBe("running")
        // And a new run is refused rather than started without a lease.
        const refused = yield* Effect.flip(host.create({ did: DID, sessionId: "t", requestId: "r" }))
        expect(refused.reason).toBe("unavailable")
      })
    ))
})
