/**
 * The sync engine's rules, against the in-memory store (no homeserver needed): unchanged
 * snapshots are not uploaded, the write lock is honoured, failures are retried and never thrown,
 * and no empty or diverged database ever replaces the room's snapshot.
 */
import { existsSync, readdirSync } from "node:fs"
import { dirname, join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import {
  MatrixSyncEngine,
  MatrixSyncEngineError,
  type MatrixSyncEngineOptions,
  memorySnapshotStore,
  type SnapshotStore,
  userDatabaseDirectory
} from "../src/index.js"
import { flakyStore, readRows, recordingLogger, tempDir, writeRows } from "./helpers.js"

const did = "did:key:z6MkUserOne"
const cleanups: Array<() => void> = []
afterEach(() => {
  for (const c of cleanups.splice(0)) c()
})

const host = (store: SnapshotStore, extra: Partial<MatrixSyncEngineOptions> = {}) => {
  const dir = tempDir("matrix-host")
  const logger = recordingLogger()
  const databases = userDatabaseDirectory(dir.path)
  const engine = new MatrixSyncEngine({
    store,
    databases,
    logger,
    debounceMs: 20,
    intervalMs: 0,
    retry: { baseMs: 20, maxMs: 100, maxAttempts: 50 },
    ...extra
  })
  cleanups.push(() => engine.close(), dir.cleanup)
  return { engine, databases, logger, path: databases.databasePath(did) }
}

const waitFor = async (check: () => boolean, ms = 5_000): Promise<void> => {
  const until = Date.now() + ms
  while (!check()) {
    if (Date.now() > until) throw new Error("condition not met in time")
    await new Promise((r) => setTimeout(r, 10))
  }
}

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
    const a = host(store)
    writeRows(a.path, ["before"])
    let release: () => void = () => {}
    const turn = a.databases.withUserWriteLock(did, async () => {
      await new Promise<void>((r) => {
        release = r
      })
      writeRows(a.path, ["inside the turn"])
    })
    const sync = a.engine.syncNow(did)
    await new Promise((r) => setTimeout(r, 50))
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
    const a = host(flaky, { retry: { baseMs: 5, maxMs: 10, maxAttempts: 3 } })
    writeRows(a.path, ["r1"])
    flaky.down = true
    a.engine.scheduleSync(did, 0)
    await waitFor(() => a.logger.lines.some((l) => l.includes("waiting for the next schedule")))
    const calls = flaky.calls
    await new Promise((r) => setTimeout(r, 100))
    expect(flaky.calls).toBe(calls)
  })

  it("flush pushes debounced work out at once, and reports what could not be synced in time", async () => {
    const store = memorySnapshotStore()
    const flaky = flakyStore(store)
    const a = host(flaky, { debounceMs: 60_000 })
    writeRows(a.path, ["r1"])
    a.engine.scheduleSync(did)
    const report = await a.engine.flush(5_000)
    expect(report.synced.map((s) => s.outcome._tag)).toEqual(["Uploaded"])
    expect(store.media.size).toBe(1)

    writeRows(a.path, ["r2"])
    a.engine.scheduleSync(did)
    flaky.down = true
    const started = Date.now()
    const failed = await a.engine.flush(300)
    expect(Date.now() - started).toBeLessThan(2_000)
    expect(failed.failed.map((f) => f.did)).toEqual([did])
    expect(failed.failed[0]?.error).toContain("unavailable")
  })
})

/**
 * The memory store with a gate on `upload`: while `hold` is set, an upload waits until `release`
 * lets it through (or fails it as a homeserver outage would).
 */
const gatedStore = () => {
  const inner = memorySnapshotStore()
  const gate = {
    hold: true,
    started: 0,
    uploads: 0,
    release: (_fail?: boolean) => {}
  }
  const store: SnapshotStore = {
    ...inner,
    upload: async (bytes, name) => {
      gate.started += 1
      if (gate.hold) {
        const fail = await new Promise<boolean>((r) => {
          gate.release = (f = false) => {
            gate.hold = false
            r(f)
          }
        })
        if (fail)
          throw new MatrixSyncEngineError({ reason: "unavailable", message: "connection reset (test)" })
      }
      gate.uploads += 1
      return inner.upload(bytes, name)
    }
  }
  return { inner, store, gate }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe("flush on shutdown with an upload already running", () => {
  it("waits for the running upload: its pointer lands before flush resolves, reported as synced", async () => {
    const { inner, store, gate } = gatedStore()
    const a = host(store, { debounceMs: 60_000 })
    writeRows(a.path, ["last turn"])
    a.engine.scheduleSync(did, 0)
    await waitFor(() => gate.started === 1)
    // The running sync cleared the dirty flag; the user is still pending until it lands.
    expect(a.engine.pendingCount()).toBe(1)
    let settled = false
    const flushing = a.engine.flush(5_000).finally(() => {
      settled = true
    })
    await sleep(100)
    expect(settled).toBe(false)
    expect(inner.pointers.size).toBe(0)
    gate.release()
    const report = await flushing
    expect(report.synced).toEqual([{ did, outcome: expect.objectContaining({ _tag: "Uploaded" }) }])
    expect(report.failed).toEqual([])
    expect(report.timedOut).toEqual([])
    expect(inner.pointers.size).toBe(1)
    expect(gate.uploads).toBe(1) // the running upload was waited for, not repeated
    expect(a.engine.pendingCount()).toBe(0)
    await sleep(20)
    expect(a.logger.lines.filter((l) => l.startsWith("info synced"))).toHaveLength(1)
    const b = host(inner)
    expect((await b.engine.restore(did))._tag).toBe("Restored")
    expect(readRows(b.path)).toEqual(["last turn"])
  })

  it("a turn that ends during the running upload is synced again before flush resolves", async () => {
    const { inner, store, gate } = gatedStore()
    const a = host(store, { debounceMs: 60_000 })
    writeRows(a.path, ["first"])
    a.engine.scheduleSync(did, 0)
    await waitFor(() => gate.started === 1)
    writeRows(a.path, ["written during the upload"])
    a.engine.scheduleSync(did)
    const flushing = a.engine.flush(5_000)
    await sleep(50)
    gate.release()
    const report = await flushing
    expect(report.synced.map((s) => [s.did, s.outcome._tag])).toEqual([[did, "Uploaded"]])
    expect(gate.uploads).toBe(2)
    expect(a.engine.pendingCount()).toBe(0)
    // One line per upload: the background one it waited for, and its own.
    await sleep(20)
    expect(a.logger.lines.filter((l) => l.startsWith("info synced"))).toHaveLength(2)
    const b = host(inner)
    await b.engine.restore(did)
    expect(readRows(b.path)).toEqual(["first", "written during the upload"])
  })

  it("an upload slower than the deadline: flush returns at the deadline, reports it timed out, loses nothing", async () => {
    const { inner, store, gate } = gatedStore()
    const a = host(store)
    writeRows(a.path, ["slow"])
    a.engine.scheduleSync(did, 0)
    await waitFor(() => gate.started === 1)
    const started = Date.now()
    const report = await a.engine.flush(300)
    expect(Date.now() - started).toBeGreaterThanOrEqual(250)
    expect(Date.now() - started).toBeLessThan(3_000)
    expect(report).toEqual({ synced: [], failed: [], timedOut: [did] })
    expect(a.logger.lines).toContain("error flush: 0 synced, 0 failed, 1 timed out after 300 ms")
    expect(a.engine.pendingCount()).toBe(1)
    expect(inner.pointers.size).toBe(0)
    // The upload outlives the flush and fails; the user is retried and the state lands.
    gate.release(true)
    await waitFor(() => a.logger.lines.some((l) => l.includes("retrying in")))
    await waitFor(() => inner.pointers.size === 1 && a.engine.pendingCount() === 0)
    const b = host(inner)
    await b.engine.restore(did)
    expect(readRows(b.path)).toEqual(["slow"])
  })

  it("a user with nothing running and nothing scheduled is not part of a flush", async () => {
    const { inner, store, gate } = gatedStore()
    gate.hold = false
    const a = host(store)
    writeRows(a.path, ["x"])
    await a.engine.syncNow(did)
    expect(await a.engine.flush(1_000)).toEqual({ synced: [], failed: [], timedOut: [] })
    expect(inner.media.size).toBe(1)
  })
})

describe("the periodic tick", () => {
  it("uploads a changed database without any scheduleSync, and skips an unchanged one", async () => {
    const { inner, store, gate } = gatedStore()
    gate.hold = false
    const a = host(store, { intervalMs: 50 })
    writeRows(a.path, ["written outside any turn hook"])
    // The engine learns about the user the way a host does before serving them.
    expect(await a.engine.restore(did)).toEqual({ _tag: "LocalPresent" })
    expect(inner.media.size).toBe(0)
    a.engine.start()
    await waitFor(() => inner.pointers.size === 1)
    expect(gate.uploads).toBe(1)
    // Several ticks over an unchanged database: no upload.
    await sleep(300)
    expect(gate.uploads).toBe(1)
    expect(a.logger.lines.filter((l) => l.startsWith("info synced"))).toHaveLength(1)
    // A change is picked up by the next tick.
    writeRows(a.path, ["changed later"])
    await waitFor(() => gate.uploads === 2)
    await waitFor(() => a.engine.pendingCount() === 0)
    const b = host(inner)
    await b.engine.restore(did)
    expect(readRows(b.path)).toEqual(["written outside any turn hook", "changed later"])
  })
})
