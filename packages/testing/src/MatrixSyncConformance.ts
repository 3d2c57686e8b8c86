/**
 * The conformance suite of the `MatrixSync` port. The factory returns a world with one shared
 * replica store (a homeserver) and a way to start hosts on it, each with its own local state:
 *
 * ```ts
 * MatrixSyncConformance.run("memory", () => {
 *   const remote = MatrixSync.makeMemoryRemote()
 *   return {
 *     host: () => MatrixSync.makeMemoryHost(remote).pipe(Effect.provide(Clock.layer)),
 *     setRemoteAvailable: (up) => Effect.sync(() => { remote.available = up })
 *   }
 * })
 * ```
 */
import type { MatrixSync } from "@plugboard/core"
import { Effect, Exit, type Scope } from "effect"
import { describe, expect, it } from "vitest"
import { acquire, type Factory, failureOf } from "./Factory.js"

/** One host: its sync service and its local copy of users' state. */
export interface MatrixSyncHost {
  readonly sync: MatrixSync.MatrixSyncService
  /** Changes the user's local state, as a turn would. */
  readonly write: (did: string, data: string) => Effect.Effect<void, unknown>
  /** The user's local state, if this host has any. */
  readonly read: (did: string) => Effect.Effect<string | undefined, unknown>
}

/** A world of hosts sharing one replica store. */
export interface MatrixSyncWorld {
  readonly host: () => Effect.Effect<MatrixSyncHost, unknown, Scope.Scope>
  /** Cuts or restores the link to the replica store, if the implementation can simulate it. */
  readonly setRemoteAvailable?: (available: boolean) => Effect.Effect<void, unknown>
}

const ALICE = "did:key:z6MkAlice"
const BOB = "did:key:z6MkBob"
/** Long enough for any implementation to upload a few small users. */
const GENEROUS = 60_000

const withWorld = <A>(
  factory: Factory<MatrixSyncWorld>,
  body: (w: MatrixSyncWorld) => Effect.Effect<A, unknown, Scope.Scope>
) => Effect.runPromise(Effect.scoped(Effect.flatMap(acquire(factory), body)))

const expectFailure = (
  effect: Effect.Effect<unknown, MatrixSync.MatrixSyncError>,
  reason: MatrixSync.MatrixSyncError["reason"]
) =>
  Effect.map(Effect.exit(effect), (exit) => {
    expect(Exit.isFailure(exit)).toBe(true)
    const error = failureOf(exit)
    expect(error?._tag).toBe("MatrixSyncError")
    expect(error?.reason).toBe(reason)
  })

/** Registers the MatrixSync conformance suite for one implementation. */
export const run = (name: string, factory: Factory<MatrixSyncWorld>): void => {
  describe(`MatrixSync conformance: ${name}`, () => {
    it("a user nobody has seen is 'absent'", () =>
      withWorld(factory, (world) =>
        Effect.gen(function* () {
          const a = yield* world.host()
          expect(yield* a.sync.restore(ALICE)).toBe("absent")
          expect(yield* a.read(ALICE)).toBeUndefined()
        })
      ))

    it("a local copy with no replica is 'kept-local'", () =>
      withWorld(factory, (world) =>
        Effect.gen(function* () {
          const a = yield* world.host()
          yield* a.write(ALICE, "v1")
          expect(yield* a.sync.restore(ALICE)).toBe("kept-local")
          expect(yield* a.read(ALICE)).toBe("v1")
        })
      ))

    it("a user moves to another host: scheduled, flushed, restored there", () =>
      withWorld(factory, (world) =>
        Effect.gen(function* () {
          const a = yield* world.host()
          const b = yield* world.host()
          yield* a.write(ALICE, "alice-state-1")
          yield* a.sync.scheduleSync(ALICE)
          expect(yield* a.sync.flush(GENEROUS)).toEqual({ synced: 1, pending: 0 })
          expect(yield* b.sync.restore(ALICE)).toBe("restored")
          expect(yield* b.read(ALICE)).toBe("alice-state-1")
          expect(yield* b.sync.restore(ALICE)).toBe("kept-local")
          // Users are separate: Bob was never synced.
          expect(yield* b.sync.restore(BOB)).toBe("absent")
        })
      ))

    it("the newer state wins when the user comes back", () =>
      withWorld(factory, (world) =>
        Effect.gen(function* () {
          const a = yield* world.host()
          const b = yield* world.host()
          yield* a.write(ALICE, "from-a")
          yield* a.sync.scheduleSync(ALICE)
          yield* a.sync.flush(GENEROUS)
          yield* b.sync.restore(ALICE)
          yield* b.write(ALICE, "from-b")
          yield* b.sync.scheduleSync(ALICE)
          yield* b.sync.flush(GENEROUS)
          expect(yield* a.sync.restore(ALICE)).toBe("restored")
          expect(yield* a.read(ALICE)).toBe("from-b")
          // A local change not yet flushed is newer than the replica: kept.
          yield* a.write(ALICE, "from-a-again")
          expect(yield* a.sync.restore(ALICE)).toBe("kept-local")
          expect(yield* a.read(ALICE)).toBe("from-a-again")
        })
      ))

    it("scheduling a user twice before a flush uploads once, with the latest state", () =>
      withWorld(factory, (world) =>
        Effect.gen(function* () {
          const a = yield* world.host()
          const b = yield* world.host()
          yield* a.write(ALICE, "one")
          yield* a.sync.scheduleSync(ALICE)
          yield* a.write(ALICE, "two")
          yield* a.sync.scheduleSync(ALICE)
          yield* a.sync.scheduleSync(BOB)
          yield* a.write(BOB, "bob")
          expect(yield* a.sync.flush(GENEROUS)).toEqual({ synced: 2, pending: 0 })
          expect(yield* a.sync.flush(GENEROUS)).toEqual({ synced: 0, pending: 0 })
          yield* b.sync.restore(ALICE)
          yield* b.sync.restore(BOB)
          expect(yield* b.read(ALICE)).toBe("two")
          expect(yield* b.read(BOB)).toBe("bob")
        })
      ))

    it("a flush with no time left keeps every user scheduled for the next one", () =>
      withWorld(factory, (world) =>
        Effect.gen(function* () {
          const a = yield* world.host()
          const b = yield* world.host()
          for (const did of [ALICE, BOB]) {
            yield* a.write(did, `${did}-state`)
            yield* a.sync.scheduleSync(did)
          }
          const hurried = yield* a.sync.flush(0)
          expect(hurried.synced + hurried.pending).toBe(2)
          const rest = yield* a.sync.flush(GENEROUS)
          expect(rest).toEqual({ synced: hurried.pending, pending: 0 })
          yield* b.sync.restore(BOB)
          expect(yield* b.read(BOB)).toBe(`${BOB}-state`)
        })
      ))

    it("refuses bad DIDs and deadlines with typed errors", () =>
      withWorld(factory, (world) =>
        Effect.gen(function* () {
          const a = yield* world.host()
          for (const did of ["", "alice", "did:key:", undefined] as Array<string>) {
            yield* expectFailure(a.sync.scheduleSync(did), "invalid-did")
            yield* expectFailure(a.sync.restore(did), "invalid-did")
          }
          for (const deadline of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
            yield* expectFailure(a.sync.flush(deadline), "invalid-deadline")
          }
        })
      ))

    it("an unreachable homeserver fails 'unavailable' and loses nothing", async (ctx) => {
      const canCut = await withWorld(factory, (w) => Effect.succeed(w.setRemoteAvailable !== undefined))
      if (!canCut) ctx.skip()
      await withWorld(factory, (world) =>
        Effect.gen(function* () {
          const a = yield* world.host()
          const b = yield* world.host()
          yield* a.write(ALICE, "precious")
          yield* a.sync.scheduleSync(ALICE)
          yield* world.setRemoteAvailable!(false)
          yield* expectFailure(a.sync.flush(GENEROUS), "unavailable")
          yield* expectFailure(b.sync.restore(ALICE), "unavailable")
          expect(yield* a.read(ALICE)).toBe("precious")
          yield* world.setRemoteAvailable!(true)
          expect(yield* a.sync.flush(GENEROUS)).toEqual({ synced: 1, pending: 0 })
          expect(yield* b.sync.restore(ALICE)).toBe("restored")
          expect(yield* b.read(ALICE)).toBe("precious")
        })
      )
    })
  })
}
