/**
 * The sync engine's flush at shutdown with an upload already running, and its periodic tick,
 * against the in-memory store, on a manual clock (`manualClock.ts`): a deadline is reached by
 * advancing time, and the tests wait on gates and on the engine's state, never on a sleep.
 */
import { describe, expect, it } from "vitest"
import {
  MatrixSyncEngineError,
  type MatrixSyncEngineOptions,
  memorySnapshotStore,
  type SnapshotStore,
  type UserDatabaseDirectory
} from "../src/index.js"
import { cleanupList, readRows, testHost, waitFor, writeRows } from "./helpers.js"
import { manualClock } from "./manualClock.js"

const did = "did:key:z6MkUserOne"
const cleanups = cleanupList()
const host = (
  store: SnapshotStore,
  extra: Partial<MatrixSyncEngineOptions> = {},
  wrap?: (d: UserDatabaseDirectory) => UserDatabaseDirectory
) => testHost(cleanups, store, did, extra, wrap)

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

describe("flush on shutdown with an upload already running", () => {
  it("waits for the running upload: its pointer lands before flush resolves, reported as synced", async () => {
    const { inner, store, gate } = gatedStore()
    const clock = manualClock()
    const a = host(store, { debounceMs: 60_000, timers: clock.timers })
    writeRows(a.path, ["last turn"])
    a.engine.scheduleSync(did, 0)
    await clock.advance(0)
    await waitFor(() => gate.started === 1)
    // The running sync cleared the dirty flag; the user is still pending until it lands.
    expect(a.engine.pendingCount()).toBe(1)
    let settled = false
    const flushing = a.engine.flush(5_000).finally(() => {
      settled = true
    })
    await clock.advance(4_999) // up to just before the deadline: the upload is still running
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
    // Behind the user's queue, so after the background sync has logged: nothing left to upload.
    expect((await a.engine.syncNow(did))._tag).toBe("Unchanged")
    expect(a.logger.lines.filter((l) => l.startsWith("info synced"))).toHaveLength(1)
    const b = host(inner)
    expect((await b.engine.restore(did))._tag).toBe("Restored")
    expect(readRows(b.path)).toEqual(["last turn"])
  })

  it("a turn that ends during the running upload is synced again before flush resolves", async () => {
    const { inner, store, gate } = gatedStore()
    const clock = manualClock()
    const a = host(store, { debounceMs: 60_000, timers: clock.timers })
    writeRows(a.path, ["first"])
    a.engine.scheduleSync(did, 0)
    await clock.advance(0)
    await waitFor(() => gate.started === 1)
    writeRows(a.path, ["written during the upload"])
    a.engine.scheduleSync(did)
    // flush takes the running upload synchronously, before the gate opens.
    const flushing = a.engine.flush(5_000)
    gate.release()
    const report = await flushing
    expect(report.synced.map((s) => [s.did, s.outcome._tag])).toEqual([[did, "Uploaded"]])
    expect(gate.uploads).toBe(2)
    expect(a.engine.pendingCount()).toBe(0)
    // One line per upload: the background one it waited for, and its own (the user's queue is
    // drained once a sync behind it answers).
    expect((await a.engine.syncNow(did))._tag).toBe("Unchanged")
    expect(a.logger.lines.filter((l) => l.startsWith("info synced"))).toHaveLength(2)
    const b = host(inner)
    await b.engine.restore(did)
    expect(readRows(b.path)).toEqual(["first", "written during the upload"])
  })

  it("an upload slower than the deadline: flush returns at the deadline, reports it timed out, loses nothing", async () => {
    const { inner, store, gate } = gatedStore()
    const clock = manualClock()
    const a = host(store, { timers: clock.timers })
    writeRows(a.path, ["slow"])
    a.engine.scheduleSync(did, 0)
    await clock.advance(0)
    await waitFor(() => gate.started === 1)
    let settled = false
    const flushing = a.engine.flush(300).finally(() => {
      settled = true
    })
    await clock.advance(299)
    expect(settled).toBe(false)
    await clock.advance(1)
    const report = await flushing
    expect(report).toEqual({ synced: [], failed: [], timedOut: [did] })
    expect(a.logger.lines).toContain("error flush: 0 synced, 0 failed, 1 timed out after 300 ms")
    expect(a.engine.pendingCount()).toBe(1)
    expect(inner.pointers.size).toBe(0)
    // The upload outlives the flush and fails; the user is retried and the state lands.
    gate.release(true)
    await waitFor(() => a.logger.lines.some((l) => l.includes("retrying in")))
    await clock.advance(200) // the retry (≤ 24 ms) and flush's new schedule (20 ms debounce)
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
    const clock = manualClock()
    let backups = 0
    const a = host(store, { intervalMs: 50, timers: clock.timers }, (d) => ({
      ...d,
      withUserWriteLock: (user, fn) => {
        backups += 1
        return d.withUserWriteLock(user, fn)
      }
    }))
    writeRows(a.path, ["written outside any turn hook"])
    // The engine learns about the user the way a host does before serving them.
    expect(await a.engine.restore(did)).toEqual({ _tag: "LocalPresent" })
    expect(inner.media.size).toBe(0)
    a.engine.start()
    await clock.advance(50)
    await waitFor(() => inner.pointers.size === 1 && a.engine.pendingCount() === 0)
    expect(gate.uploads).toBe(1)
    // Several ticks over an unchanged database: a backup each, no upload.
    for (let tick = 0; tick < 3; tick++) {
      const before = backups
      await clock.advance(50)
      await waitFor(() => backups > before && a.engine.pendingCount() === 0)
    }
    expect(gate.uploads).toBe(1)
    expect(a.logger.lines.filter((l) => l.startsWith("info synced"))).toHaveLength(1)
    // A change is picked up by the next tick.
    writeRows(a.path, ["changed later"])
    await clock.advance(50)
    await waitFor(() => gate.uploads === 2)
    await waitFor(() => a.engine.pendingCount() === 0)
    const b = host(inner)
    await b.engine.restore(did)
    expect(readRows(b.path)).toEqual(["written outside any turn hook", "changed later"])
  })
})
