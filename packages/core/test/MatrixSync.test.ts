import { MatrixSyncConformance } from "@plugboard/testing"
import { Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import * as Clock from "../src/Clock.js"
import * as MatrixSync from "../src/MatrixSync.js"

MatrixSyncConformance.run("memory", () => {
  const remote = MatrixSync.makeMemoryRemote()
  return {
    host: () => MatrixSync.makeMemoryHost(remote).pipe(Effect.provide(Clock.layer)),
    setRemoteAvailable: (available) =>
      Effect.sync(() => {
        remote.available = available
      })
  }
})

describe("MatrixSync.layerDisabled", () => {
  it("replicates nothing, answers 'absent', and still validates its inputs", async () => {
    const [outcome, flushed, badDid, badDeadline] = await Effect.gen(function* () {
      const sync = yield* MatrixSync.MatrixSync
      yield* sync.scheduleSync("did:key:z6MkA")
      return [
        yield* sync.restore("did:key:z6MkA"),
        yield* sync.flush(1000),
        yield* Effect.exit(sync.scheduleSync("alice")),
        yield* Effect.exit(sync.flush(-1))
      ] as const
    }).pipe(Effect.provide(MatrixSync.layerDisabled), Effect.runPromise)
    expect(outcome).toBe("absent")
    expect(flushed).toEqual({ synced: 0, pending: 0 })
    expect(Exit.isFailure(badDid) && badDid.cause._tag === "Fail" && badDid.cause.error.reason).toBe(
      "invalid-did"
    )
    expect(
      Exit.isFailure(badDeadline) && badDeadline.cause._tag === "Fail" && badDeadline.cause.error.reason
    ).toBe("invalid-deadline")
  })
})

describe("MatrixSync memory host", () => {
  it("stops at the deadline measured on the Clock port", async () => {
    const result = await Effect.gen(function* () {
      const clock = yield* Clock.makeTest(0)
      const host = yield* MatrixSync.makeMemoryHost(MatrixSync.makeMemoryRemote()).pipe(
        Effect.provideService(Clock.Clock, clock)
      )
      for (const did of ["did:key:a", "did:key:b", "did:key:c"]) {
        yield* host.write(did, did)
        yield* host.sync.scheduleSync(did)
      }
      const none = yield* host.sync.flush(0)
      const all = yield* host.sync.flush(1)
      return [none, all]
    }).pipe(Effect.runPromise)
    expect(result).toEqual([
      { synced: 0, pending: 3 },
      { synced: 3, pending: 0 }
    ])
  })
})

describe("MatrixSync.layerMemory", () => {
  it("provides the port as a memory host replicating to the given remote", async () => {
    const remote = MatrixSync.makeMemoryRemote()
    remote.snapshots.set("did:key:alice", { version: 1, data: "state" })
    const outcome = await Effect.gen(function* () {
      const sync = yield* MatrixSync.MatrixSync
      return yield* sync.restore("did:key:alice")
    }).pipe(Effect.provide(MatrixSync.layerMemory(remote)), Effect.provide(Clock.layer), Effect.runPromise)
    expect(outcome).toBe("restored")
    const absent = await Effect.gen(function* () {
      return yield* (yield* MatrixSync.MatrixSync).restore("did:key:alice")
    }).pipe(Effect.provide(MatrixSync.layerMemory()), Effect.provide(Clock.layer), Effect.runPromise)
    expect(absent).toBe("absent")
  })
})
