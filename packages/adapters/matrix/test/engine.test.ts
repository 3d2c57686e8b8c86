/**
 * The sync engine's rules, against the in-memory store (no homeserver needed): unchanged
 * snapshots are not uploaded, the write lock is honoured, failures are retried and never thrown,
 * and no empty or diverged database ever replaces the room's snapshot. Time-dependent rules run on a
 * manual clock (`manualClock.ts`): time moves when the test advances it, never by sleeping.
 */
import { existsSync, readdirSync } from "node:fs"
import { dirname, join } from "node:path"
import { describe, expect, it } from "vitest"
import {
  type MatrixSyncEngineOptions,
  memorySnapshotStore,
  type SnapshotStore,
  type UserDatabaseDirectory
} from "../src/index.js"
import { cleanupList, flakyStore, readRows, testHost, waitFor, writeRows } from "./helpers.js"
import { manualClock } from "./manualClock.js"

const did = "did:key:z6MkUserOne"
const cleanups = cleanupList()
const host = (
  store: SnapshotStore,
  extra: Partial<MatrixSyncEngineOptions> = {},
  wrap?: (d: UserDatabaseDirectory) => UserDatabaseDirectory
) => testHost(cleanups, store, did, extra, wrap)

describe("MatrixSyncEngine (memory store)", () => {
  it("uploads, skips unchanged snapshots, and restores on a fresh host", async () => {
    const store = memorySnapshotStore()
    const a = host(store)
    writeRows(a.path, ["hello", "world"])
    const first = await a.engine.syncNow(did)
    expect(first._tag).toBe("Uploaded")
    expect(store.media.size).toBe(1)
    expect((await a.engine.syncNow(did))._tag).toBe("Unchanged")
    expect(store.media.size).toBe(1)

    writeRows(a.path, ["again"])
    expect((await a.engine.syncNow(did))._tag).toBe("Uploaded")
    const [pointer] = [...store.pointers.values()]
    expect(pointer?.previousSha256).toBe(first._tag === "Uploaded" ? first.sha256 : "")

    const b = host(store)
    expect(existsSync(b.path)).toBe(false)
    const restored = await b.engine.restore(did)
    expect(restored._tag).toBe("Restored")
    expect(readRows(b.path)).toEqual(["hello", "world", "again"])
    expect(b.engine.restoreStatus(did)).toBe("resolved")
    // B continues the lineage: its next write is accepted over A's snapshot.
    writeRows(b.path, ["from b"])
    expect((await b.engine.syncNow(did))._tag).toBe("Uploaded")
  })

  it("a user with nothing in the room restores to nothing and may then upload", async () => {
    const b = host(memorySnapshotStore())
    expect(await b.engine.restore(did)).toEqual({ _tag: "NoBackup" })
    expect(existsSync(b.path)).toBe(false)
    writeRows(b.path, ["first"])
    expect((await b.engine.syncNow(did))._tag).toBe("Uploaded")
  })

  it("takes the backup inside the user's write lock, after the running turn's writes", async () => {
    const store = memorySnapshotStore()
    let lockAsked!: () => void
    const asked = new Promise<void>((r) => {
      lockAsked = r
    })
    let entered = false
    const a = host(store, {}, (d) => ({
      ...d,
      withUserWriteLock: (user, fn) => {
        lockAsked()
        return d.withUserWriteLock(user, (db) => {
          entered = true
          return fn(db)
        })
      }
    }))
    writeRows(a.path, ["before"])
    let release: () => void = () => {}
    const turn = a.databases.withUserWriteLock(did, async () => {
      await new Promise<void>((r) => {
        release = r
      })
      writeRows(a.path, ["inside the turn"])
    })
    const sync = a.engine.syncNow(did)
    await asked
    // Asked for the lock; not let in while the turn holds it (a free lock lets it in at once).
    await new Promise((r) => setImmediate(r))
    expect(entered).toBe(false)
    release()
    await turn
    await sync
    const b = host(store)
    expect((await b.engine.restore(did))._tag).toBe("Restored")
    expect(readRows(b.path)).toEqual(["before", "inside the turn"])
  })

  it("a failed restore blocks uploads: an empty database never replaces the room's snapshot", async () => {
    const store = memorySnapshotStore()
    const a = host(store)
    writeRows(a.path, ["precious"])
    await a.engine.syncNow(did)
    const good = [...store.pointers.values()][0]

    const flaky = flakyStore(store)
    const c = host(flaky)
    flaky.down = true
    const outcome = await c.engine.restore(did)
    expect(outcome._tag).toBe("Unavailable")
    expect(c.engine.restoreStatus(did)).toBe("pending")
    // The turn proceeds on empty state and creates a database, which is not uploaded.
    writeRows(c.path, ["turn on empty state"])
    expect(await c.engine.syncNow(did)).toMatchObject({ _tag: "Refused", reason: "restore-pending" })
    flaky.down = false
    // The background retry restores the room's snapshot and keeps the local one aside.
    await waitFor(() => c.engine.restoreStatus(did) === "resolved")
    expect([...store.pointers.values()][0]).toEqual(good)
    expect(readRows(c.path)).toEqual(["precious"])
    const aside = readdirSync(dirname(c.path)).filter((f) => f.includes(".conflict-"))
    expect(aside).toHaveLength(1)
    expect(readRows(join(dirname(c.path), aside[0] ?? ""))).toEqual(["turn on empty state"])
    expect(c.logger.lines.some((l) => l.includes("kept as"))).toBe(true)
    // The next explicit restore reports what the background retry did.
    expect(await c.engine.restore(did)).toMatchObject({ _tag: "Restored", sha256: good?.sha256 })
    expect(await c.engine.restore(did)).toEqual({ _tag: "LocalPresent" })
    expect((await c.engine.syncNow(did))._tag).toBe("Unchanged")
  })

  it("a newer snapshot in the room replaces an unchanged local database on restore", async () => {
    const store = memorySnapshotStore()
    const a = host(store)
    writeRows(a.path, ["a1"])
    await a.engine.syncNow(did)
    const b = host(store)
    await b.engine.restore(did)
    writeRows(b.path, ["b2"])
    await b.engine.syncNow(did)
    const back = await a.engine.restore(did)
    expect(back).toMatchObject({ _tag: "Restored", movedAside: undefined })
    expect(readRows(a.path)).toEqual(["a1", "b2"])
    writeRows(a.path, ["a3"])
    expect(await a.engine.restore(did)).toEqual({ _tag: "LocalPresent" })
    expect(readRows(a.path)).toEqual(["a1", "b2", "a3"])
  })

  it("restore before every turn is free while fresh, and asks the room again once stale", async () => {
    const store = memorySnapshotStore()
    const a = host(store)
    writeRows(a.path, ["a1"])
    await a.engine.syncNow(did)
    const flaky = flakyStore(store)
    const b = host(flaky, { recheckAfterMs: 60_000 })
    expect((await b.engine.restore(did))._tag).toBe("Restored")
    const calls = flaky.calls
    expect(await b.engine.restore(did)).toEqual({ _tag: "LocalPresent" })
    expect(flaky.calls).toBe(calls)
    const c = host(flaky, { recheckAfterMs: 0 })
    await c.engine.restore(did)
    const before = flaky.calls
    expect(await c.engine.restore(did)).toEqual({ _tag: "LocalPresent" })
    expect(flaky.calls).toBeGreaterThan(before)
  })

  it("never uploads over a snapshot it does not descend from (two hosts), until adoptLocal", async () => {
    const store = memorySnapshotStore()
    const a = host(store)
    writeRows(a.path, ["a1"])
    await a.engine.syncNow(did)
    const b = host(store)
    await b.engine.restore(did)
    writeRows(a.path, ["a2"])
    await a.engine.syncNow(did)
    writeRows(b.path, ["b2"])
    expect(await b.engine.syncNow(did)).toMatchObject({ _tag: "Refused", reason: "diverged" })
    const c = host(store)
    await c.engine.restore(did)
    expect(readRows(c.path)).toEqual(["a1", "a2"])

    await b.engine.adoptLocal(did)
    expect((await b.engine.syncNow(did))._tag).toBe("Uploaded")
    expect(readRows(b.path)).toEqual(["a1", "b2"])
    // A restore (rather than adoptLocal) would have kept b's unsynced state aside.
    writeRows(c.path, ["c3"])
    const moved = await c.engine.restore(did)
    expect(moved._tag).toBe("Restored")
    expect(readRows(c.path)).toEqual(["a1", "b2"])
    const aside = moved._tag === "Restored" ? moved.movedAside : undefined
    expect(aside && readRows(aside)).toEqual(["a1", "a2", "c3"])
  })

  it("scheduleSync never throws; failures are logged and retried with backoff until they succeed", async () => {
    const store = memorySnapshotStore()
    const flaky = flakyStore(store)
    const a = host(flaky)
    writeRows(a.path, ["r1"])
    flaky.down = true
    expect(() => a.engine.scheduleSync(did)).not.toThrow()
    await waitFor(() => a.logger.lines.filter((l) => l.includes("retrying in")).length >= 3)
    const retryLines = a.logger.lines.filter((l) => l.includes("retrying in"))
    const delays = retryLines.map((l) => Number(/retrying in (\d+) ms/.exec(l)?.[1]))
    expect(delays[2]).toBeGreaterThan(delays[0] ?? Infinity) // grows
    expect(store.media.size).toBe(0)
    flaky.down = false
    await waitFor(() => store.media.size === 1)
    await waitFor(() => a.logger.lines.some((l) => l.startsWith("info synced")))
  })

  it("gives up after maxAttempts and waits for the next schedule (bounded)", async () => {
    const flaky = flakyStore(memorySnapshotStore())
    const clock = manualClock()
    const a = host(flaky, { timers: clock.timers, retry: { baseMs: 5, maxMs: 10, maxAttempts: 3 } })
    writeRows(a.path, ["r1"])
    flaky.down = true
    a.engine.scheduleSync(did, 0)
    const retries = () => a.logger.lines.filter((l) => l.includes("retrying in")).length
    for (let attempt = 1; attempt <= 3; attempt++) {
      await clock.advance(attempt === 1 ? 0 : 12) // past the longest backoff (10 ms + 20 % jitter)
      await waitFor(() => retries() === attempt)
    }
    await clock.advance(12)
    await waitFor(() => a.logger.lines.some((l) => l.includes("waiting for the next schedule")))
    // Given up: no timer is left, and an hour later the homeserver has not been asked again.
    expect(clock.pending()).toBe(0)
    const calls = flaky.calls
    await clock.advance(3_600_000)
    expect(flaky.calls).toBe(calls)
    expect(retries()).toBe(3)
  })

  it("flush pushes debounced work out at once, and reports what could not be synced in time", async () => {
    const store = memorySnapshotStore()
    const flaky = flakyStore(store)
    const clock = manualClock()
    // Backoff (≥ 800 ms) longer than the deadline: the wait after a failure ends at the deadline.
    const a = host(flaky, {
      debounceMs: 60_000,
      timers: clock.timers,
      retry: { baseMs: 1_000, maxMs: 1_000 }
    })
    writeRows(a.path, ["r1"])
    a.engine.scheduleSync(did)
    const report = await a.engine.flush(5_000)
    expect(report.synced.map((s) => s.outcome._tag)).toEqual(["Uploaded"])
    expect(store.media.size).toBe(1)

    writeRows(a.path, ["r2"])
    a.engine.scheduleSync(did)
    flaky.down = true
    const started = clock.now()
    const armedBefore = clock.created()
    let settled = false
    const flushing = a.engine.flush(300).finally(() => {
      settled = true
    })
    await clock.armed(armedBefore + 2) // its deadline, then the backoff after the failed attempt
    await clock.advance(299)
    expect(settled).toBe(false)
    await clock.advance(1)
    const failed = await flushing
    expect(clock.now() - started).toBe(300)
    expect(failed.failed.map((f) => f.did)).toEqual([did])
    expect(failed.failed[0]?.error).toContain("unavailable")
  })
})
