/**
 * The engine at its limits: a restore whose retries ran out does not keep the user's turns out of
 * the room, an operator can adopt the local database over a pointer nobody can read, and the
 * periodic tick over many users backs up a bounded number of databases at once. Retries and ticks
 * run on a manual clock (`manualClock.ts`).
 */

import { UserDatabaseRegistry } from "@plugboard/sqlite"
import { describe, expect, it } from "vitest"
import {
  MatrixSyncEngineError,
  type MatrixSyncEngineOptions,
  memorySnapshotStore,
  type SnapshotStore,
  type UserDatabaseDirectory,
  userDatabaseDirectory
} from "../src/index.js"
import { cleanupList, flakyStore, readRows, tempDir, testEngine, waitFor, writeRows } from "./helpers.js"
import { advanceUntil, manualClock } from "./manualClock.js"

const did = "did:key:z6MkLimits"
const cleanups = cleanupList()
const engineOn = (
  store: SnapshotStore,
  databases: UserDatabaseDirectory,
  extra: Partial<MatrixSyncEngineOptions> = {}
) => testEngine(cleanups, store, databases, extra)
const scratch = (label: string) => {
  const dir = tempDir(label)
  cleanups.push(dir.cleanup)
  return userDatabaseDirectory(dir.path)
}
const postponed = (lines: ReadonlyArray<string>) => lines.filter((l) => l.includes("postponed")).length

describe("a restore whose retries ran out", () => {
  it("is tried again by the periodic sync once the homeserver is back: the turns reach the room", async () => {
    const inner = memorySnapshotStore()
    const store = flakyStore(inner)
    const databases = scratch("limits-stuck")
    const path = databases.databasePath(did)
    writeRows(path, ["turn 1"])
    expect((await engineOn(store, databases).engine.syncNow(did))._tag).toBe("Uploaded")

    // Restarted: the homeserver is down at the user's request and stays down past every retry.
    const clock = manualClock()
    const { engine, logger } = engineOn(store, databases, {
      intervalMs: 50,
      timers: clock.timers,
      retry: { baseMs: 5, maxMs: 10, maxAttempts: 2 }
    })
    engine.start()
    store.down = true
    expect((await engine.restore(did))._tag).toBe("Unavailable")
    writeRows(path, ["turn 2"])
    engine.scheduleSync(did)
    // The restore fails three times (its two retries, or the sync's try): then the tick's timer
    // is the only one left.
    await advanceUntil(clock, () => postponed(logger.lines) >= 3 && clock.pending() === 1, 5)
    expect(engine.restoreStatus(did)).toBe("pending")
    store.down = false
    // No request from the user: the periodic tick alone gets the state out.
    await clock.advance(50)
    await waitFor(() => [...inner.pointers.values()][0]?.previousSha256 !== undefined)
    expect(engine.restoreStatus(did)).toBe("resolved")
    const b = scratch("limits-stuck-b")
    expect((await engineOn(inner, b).engine.restore(did))._tag).toBe("Restored")
    expect(readRows(b.databasePath(did))).toEqual(["turn 1", "turn 2"])
  })

  it("is tried again by flush at shutdown", async () => {
    const inner = memorySnapshotStore()
    const store = flakyStore(inner)
    const databases = scratch("limits-flush")
    const path = databases.databasePath(did)
    writeRows(path, ["turn 1"])
    await engineOn(store, databases).engine.syncNow(did)
    const clock = manualClock()
    const { engine, logger } = engineOn(store, databases, {
      timers: clock.timers,
      retry: { baseMs: 5, maxMs: 10, maxAttempts: 1 }
    })
    store.down = true
    await engine.restore(did)
    writeRows(path, ["turn 2"])
    engine.scheduleSync(did, 60_000)
    await clock.advance(12) // past the restore's one retry (≤ 6 ms), which fails
    await waitFor(() => postponed(logger.lines) === 2)
    expect(clock.pending()).toBe(1) // the 60 s schedule only: no retry left
    store.down = false
    const report = await engine.flush(5_000)
    expect(report.synced.map((s) => s.outcome._tag)).toEqual(["Uploaded"])
  })
})

describe("adoptLocal over a room pointer nobody can read", () => {
  it("resolves the user, and the next sync replaces the unreadable pointer", async () => {
    const inner = memorySnapshotStore()
    let malformed = false
    const store: SnapshotStore = {
      ...inner,
      readPointer: async (roomId, key) => {
        if (malformed) {
          throw new MatrixSyncEngineError({
            reason: "corrupt",
            message: "malformed org.plugboard.snapshot content"
          })
        }
        return inner.readPointer(roomId, key)
      },
      writePointer: async (roomId, key, pointer) => {
        await inner.writePointer(roomId, key, pointer)
        malformed = false
      }
    }
    const databases = scratch("limits-adopt")
    const path = databases.databasePath(did)
    const { engine } = engineOn(store, databases)
    writeRows(path, ["mine"])
    await engine.syncNow(did)
    malformed = true // someone wrote garbage into the state event
    expect((await engine.restore(did))._tag).toBe("Rejected")
    writeRows(path, ["more"])
    expect(await engine.syncNow(did)).toMatchObject({ _tag: "Refused", reason: "restore-failed" })
    await engine.adoptLocal(did)
    expect(engine.restoreStatus(did)).toBe("resolved")
    expect((await engine.syncNow(did))._tag).toBe("Uploaded")
    const b = scratch("limits-adopt-b")
    expect((await engineOn(inner, b).engine.restore(did))._tag).toBe("Restored")
    expect(readRows(b.databasePath(did))).toEqual(["mine", "more"])
  })

  it("a restore right after adoptLocal (the user's next request) does not undo it", async () => {
    const inner = memorySnapshotStore()
    let malformed = false
    const store: SnapshotStore = {
      ...inner,
      readPointer: async (roomId, key) => {
        if (malformed) throw new MatrixSyncEngineError({ reason: "corrupt", message: "malformed" })
        return inner.readPointer(roomId, key)
      },
      writePointer: async (roomId, key, pointer) => {
        await inner.writePointer(roomId, key, pointer)
        malformed = false
      }
    }
    const databases = scratch("limits-adopt-race")
    const { engine } = engineOn(store, databases, { debounceMs: 60_000 })
    writeRows(databases.databasePath(did), ["mine"])
    await engine.syncNow(did)
    malformed = true
    expect((await engine.restore(did))._tag).toBe("Rejected")
    await engine.adoptLocal(did)
    expect(await engine.restore(did)).toEqual({ _tag: "LocalPresent" })
    expect(engine.restoreStatus(did)).toBe("resolved")
    // The adopted upload (scheduled by adoptLocal) replaces the unreadable pointer.
    await waitFor(() => !malformed)
    expect(engine.restoreStatus(did)).toBe("resolved")
    // The upload goes on after the pointer is written (its ledger, in the scratch dir): wait for
    // it, or the dir's cleanup races it (ENOTEMPTY).
    await engine.flush(5_000)
  })

  it("without adoptLocal, an unreadable pointer is never written over", async () => {
    const inner = memorySnapshotStore()
    const store: SnapshotStore = {
      ...inner,
      readPointer: async () => {
        throw new MatrixSyncEngineError({ reason: "corrupt", message: "malformed" })
      }
    }
    const databases = scratch("limits-unreadable")
    writeRows(databases.databasePath(did), ["mine"])
    expect(await engineOn(store, databases).engine.syncNow(did)).toMatchObject({
      _tag: "Refused",
      reason: "remote-unreadable"
    })
    expect(inner.pointers.size).toBe(0)
  })
})

describe("the periodic tick over many users", () => {
  it("backs up at most maxConcurrentSyncs databases at once, and syncs every user", async () => {
    const dir = tempDir("limits-tick")
    cleanups.push(dir.cleanup)
    const registry = new UserDatabaseRegistry({ directory: dir.path, retention: false, maxOpen: 4 })
    cleanups.push(() => registry.close())
    let inside = 0
    let most = 0
    let mostOpen = 0
    const counted: UserDatabaseDirectory = {
      databasePath: (d) => registry.databasePath(d),
      storageKey: (d) => registry.storageKey(d),
      withUserWriteLock: (d, fn) =>
        registry.withUserWriteLock(d, async (db) => {
          inside += 1
          most = Math.max(most, inside)
          try {
            return await fn(db)
          } finally {
            mostOpen = Math.max(mostOpen, registry.openCount)
            inside -= 1
          }
        })
    }
    const store = memorySnapshotStore()
    const { engine } = engineOn(store, counted, { maxConcurrentSyncs: 2, debounceMs: 0 })
    const users = Array.from({ length: 40 }, (_, i) => `did:key:z6MkTick${i}`)
    for (const user of users) {
      await registry.use(user, "write", (db) =>
        db.statement("INSERT INTO plugboard_meta (key, value) VALUES ('x', hex(randomblob(2000)))").run()
      )
    }
    for (const user of users) engine.scheduleSync(user, 0) // what the tick does, all at once
    await waitFor(() => engine.pendingCount() === 0 && store.pointers.size === users.length, 20_000)
    expect(most).toBe(2)
    expect(mostOpen).toBeLessThanOrEqual(4 + 2)
  })
})

describe("sync slots and busy users", () => {
  it("a user in a long turn does not hold a sync slot: another user's change is synced meanwhile", async () => {
    const dir = tempDir("limits-busy")
    cleanups.push(dir.cleanup)
    const registry = new UserDatabaseRegistry({ directory: dir.path })
    cleanups.push(() => registry.close())
    const store = memorySnapshotStore()
    const clock = manualClock()
    const { engine } = engineOn(store, registry, {
      maxConcurrentSyncs: 1,
      debounceMs: 100,
      timers: clock.timers
    })
    const long = "did:key:z6MkLongTurn"
    const other = "did:key:z6MkOther"
    let endTurn!: () => void
    const turn = registry.withTurn(long, async () => {
      await registry.use(long, "write", (db) =>
        db.statement("INSERT INTO plugboard_meta VALUES ('t', 'x')").run()
      )
      await new Promise<void>((resolve) => {
        endTurn = resolve
      })
    })
    await waitFor(() => endTurn !== undefined)
    engine.scheduleSync(long, 0) // the periodic tick reaches the busy user
    await clock.advance(0)
    expect(clock.pending()).toBe(1) // put off for a debounce, holding no slot
    await registry.use(other, "write", (db) =>
      db.statement("INSERT INTO plugboard_meta VALUES ('o', 'x')").run()
    )
    engine.scheduleSync(other, 0)
    await clock.advance(0)
    // The other user's snapshot lands while the long turn is still running.
    await waitFor(() => store.pointers.size === 1, 3_000)
    endTurn()
    await turn
    await clock.advance(100)
    await waitFor(() => store.pointers.size === 2, 5_000)
  })

  it("syncs still waiting for a slot when the engine closes never start", async () => {
    const store = memorySnapshotStore()
    let releaseFirst!: () => void
    const databases = scratch("limits-close")
    const locked: Array<string> = []
    const gated: UserDatabaseDirectory = {
      ...databases,
      withUserWriteLock: async (d, fn) => {
        locked.push(d)
        if (d === "did:key:z6MkFirst") await new Promise<void>((r) => (releaseFirst = r))
        return databases.withUserWriteLock(d, fn)
      }
    }
    const { engine } = engineOn(store, gated, { maxConcurrentSyncs: 1, debounceMs: 0 })
    for (const d of ["did:key:z6MkFirst", "did:key:z6MkSecond", "did:key:z6MkThird"]) {
      writeRows(databases.databasePath(d), [d])
      engine.scheduleSync(d, 0)
    }
    await waitFor(() => releaseFirst !== undefined)
    engine.close()
    releaseFirst()
    // What was running finished (its upload settled; the other two are still pending)...
    await waitFor(() => store.pointers.size === 1 && engine.pendingCount() === 2)
    // ...and handed its slot over: a sync let in would ask for its user's lock within promise
    // callbacks (no I/O before that), so one turn of the event loop is enough to see it.
    await new Promise((r) => setImmediate(r))
    expect(locked).toEqual(["did:key:z6MkFirst"])
    expect([...store.pointers.keys()]).toHaveLength(1)
  })
})

describe("a pointer announcing more than the host accepts", () => {
  it("is refused before anything is downloaded", async () => {
    const inner = memorySnapshotStore()
    let downloads = 0
    const store: SnapshotStore = {
      ...inner,
      download: async (mxc, options) => {
        downloads += 1
        return inner.download(mxc, options)
      }
    }
    const a = scratch("limits-huge-a")
    writeRows(a.databasePath(did), ["mine"])
    await engineOn(store, a).engine.syncNow(did)
    const [key, pointer] = [...inner.pointers.entries()][0]!
    inner.pointers.set(key, { ...pointer, compressedSize: 64 * 1024 ** 3 })
    const b = scratch("limits-huge-b")
    const outcome = await engineOn(store, b, { maxSnapshotBytes: 1024 ** 3 }).engine.restore(did)
    expect(outcome).toMatchObject({ _tag: "Rejected" })
    expect(outcome._tag === "Rejected" && outcome.message).toMatch(/over the 1073741824 B limit/)
    expect(downloads).toBe(0)
  })
})
