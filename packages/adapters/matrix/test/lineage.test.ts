/**
 * The sync ledger keeps the lineage right where a plain "last synced" record would break it:
 * - a database moved aside locally (damaged) takes its record with it, so the fresh database that
 *   replaces it is never uploaded over the room's good snapshot, and the room's state comes back;
 * - a pointer write that landed while its answer was lost is recognised as this host's own, so
 *   neither the next sync (refused as diverged) nor the next restore (replacing newer local
 *   state with the host's own older snapshot) goes wrong — across a restart too.
 */
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { dirname } from "node:path"
import type { RunnableConfig } from "@langchain/core/runnables"
import { type SqliteOpenError, UserDatabaseRegistry } from "@plugboard/sqlite"
import { describe, expect, it } from "vitest"
import { conversationCheckpoint } from "../../sqlite/test/helpers.js"
import {
  MatrixSyncEngineError,
  type MatrixSyncEngineOptions,
  memorySnapshotStore,
  type SnapshotStore,
  type UserDatabaseDirectory,
  userDatabaseDirectory
} from "../src/index.js"
import { fileIdentity, ledgerPath, sameFile } from "../src/SyncLedger.js"
import { cleanupList, flakyStore, readRows, tempDir, testEngine, writeRows } from "./helpers.js"

const did = "did:key:z6MkLineage"
const cleanups = cleanupList()
const engineOn = (
  store: SnapshotStore,
  databases: UserDatabaseDirectory,
  extra: Partial<MatrixSyncEngineOptions> = {}
) => testEngine(cleanups, store, databases, extra)

/** A store whose pointer writes land on the "homeserver" but whose answers are lost while `loseAck`. */
const lossyStore = () => {
  const inner = memorySnapshotStore()
  const state = { loseAck: false }
  const store: SnapshotStore = {
    ...inner,
    writePointer: async (roomId, key, pointer) => {
      await inner.writePointer(roomId, key, pointer)
      if (state.loseAck) {
        throw new MatrixSyncEngineError({
          reason: "unavailable",
          message: "timed out waiting for the answer"
        })
      }
    }
  }
  return { store, inner, state }
}

const pointerOf = (store: ReturnType<typeof memorySnapshotStore>) => [...store.pointers.values()][0]

describe("a database moved aside locally", () => {
  it("takes its sync record along: the fresh one is refused upload, and the room's state comes back", async () => {
    const store = memorySnapshotStore()
    const dir = tempDir("lineage-aside")
    cleanups.push(dir.cleanup)
    const openErrors: Array<SqliteOpenError> = []
    const registry = new UserDatabaseRegistry({ directory: dir.path, onOpenError: (e) => openErrors.push(e) })
    cleanups.push(() => registry.close())
    // A sticky host: a user restored recently is not re-checked against the room.
    const { engine } = engineOn(store, registry, { recheckAfterMs: 3_600_000 })
    const remember = (value: string) =>
      registry.use(did, "write", (db) =>
        db.statement("INSERT INTO plugboard_meta (key, value) VALUES (?, ?)").run(value, value)
      )
    const remembered = () =>
      registry.use(did, "read", (db) =>
        (
          db.statement("SELECT key FROM plugboard_meta WHERE key LIKE 'turn-%' ORDER BY key").all() as Array<{
            key: string
          }>
        ).map((r) => r.key)
      )

    expect((await engine.restore(did))._tag).toBe("NoBackup")
    await remember("turn-1")
    await remember("turn-2")
    const synced = await engine.syncNow(did)
    expect(synced._tag).toBe("Uploaded")
    expect((await engine.restore(did))._tag).toBe("LocalPresent")
    const good = pointerOf(store)!

    // The file is damaged under the host; the next operation moves it aside and starts afresh.
    const path = registry.databasePath(did)
    await registry.withUserWriteLock(did, async (db) => db.closeConnection())
    writeFileSync(path, Buffer.alloc(32 * 1024, 0x5a))
    expect(await remembered()).toEqual([])
    expect(openErrors.map((e) => e.reason)).toEqual(["not-a-database"])
    const aside = openErrors[0]!.movedTo!
    expect(existsSync(ledgerPath(aside))).toBe(true)
    expect(existsSync(ledgerPath(path))).toBe(false)
    await remember("turn-3 on the fresh database")

    // The near-empty database is never uploaded over the room's snapshot.
    expect(await engine.syncNow(did)).toMatchObject({ _tag: "Refused", reason: "diverged" })
    expect(pointerOf(store)).toEqual(good)
    expect(store.media.size).toBe(1)

    // The next restore asks the room although the last one is recent, and brings its state back;
    // the fresh database's turn is kept beside it.
    const restored = await engine.restore(did)
    expect(restored._tag).toBe("Restored")
    expect(await remembered()).toEqual(["turn-1", "turn-2"])
    const conflict = restored._tag === "Restored" ? restored.movedAside : undefined
    expect(conflict).toMatch(/\.conflict-/)
    expect(
      readdirSync(dirname(path)).filter((f) => f.includes(".corrupt-") && f.endsWith(".sqlite"))
    ).toEqual([])
    // And the host's lineage is whole again: its next turn is uploaded over the good snapshot.
    await remember("turn-4")
    expect((await engine.syncNow(did))._tag).toBe("Uploaded")
    expect(pointerOf(store)?.previousSha256).toBe(good.sha256)
  })
})

describe("a pointer write whose answer was lost", () => {
  const setup = () => {
    const lossy = lossyStore()
    const dir = tempDir("lineage-ack")
    cleanups.push(dir.cleanup)
    const databases = userDatabaseDirectory(dir.path)
    return { ...lossy, databases, path: databases.databasePath(did) }
  }

  it("is recognised at the next sync, also after a restart: no Diverged, the lineage goes on", async () => {
    const { store, inner, state, databases, path } = setup()
    const a = engineOn(store, databases)
    writeRows(path, ["one"])
    expect((await a.engine.syncNow(did))._tag).toBe("Uploaded")
    writeRows(path, ["two"])
    state.loseAck = true
    await expect(a.engine.syncNow(did)).rejects.toThrow(/timed out waiting/)
    state.loseAck = false
    const landed = pointerOf(inner)!
    writeRows(path, ["three"])

    // A restarted host on the same directory.
    const restarted = engineOn(store, databases)
    const next = await restarted.engine.syncNow(did)
    expect(next._tag).toBe("Uploaded")
    expect(pointerOf(inner)?.previousSha256).toBe(landed.sha256)
    // And a fresh host gets all of it.
    const bDir = tempDir("lineage-ack-b")
    cleanups.push(bDir.cleanup)
    const bDatabases = userDatabaseDirectory(bDir.path)
    expect((await engineOn(store, bDatabases).engine.restore(did))._tag).toBe("Restored")
    expect(readRows(bDatabases.databasePath(did))).toEqual(["one", "two", "three"])
  })

  it("is recognised at the next restore: the newer local state stays, nothing is moved aside", async () => {
    const { store, inner, state, databases, path } = setup()
    const a = engineOn(store, databases)
    writeRows(path, ["one"])
    await a.engine.syncNow(did)
    writeRows(path, ["two"])
    state.loseAck = true
    await expect(a.engine.syncNow(did)).rejects.toThrow()
    state.loseAck = false
    const landed = pointerOf(inner)!
    writeRows(path, ["three"])
    expect(await a.engine.restore(did)).toEqual({ _tag: "LocalPresent" })
    expect(readRows(path)).toEqual(["one", "two", "three"])
    expect(readdirSync(dirname(path)).filter((f) => f.includes(".conflict-"))).toEqual([])
    expect((await a.engine.syncNow(did))._tag).toBe("Uploaded")
    expect(pointerOf(inner)?.previousSha256).toBe(landed.sha256)
  })

  it("a write that did not land leaves the room as it was, and the next sync uploads over it", async () => {
    const { store, inner, databases, path } = setup()
    const a = engineOn(store, databases)
    writeRows(path, ["one"])
    await a.engine.syncNow(did)
    const before = pointerOf(inner)!
    const failing: SnapshotStore = {
      ...store,
      writePointer: async () => {
        throw new MatrixSyncEngineError({ reason: "unavailable", message: "connection refused" })
      }
    }
    const down = engineOn(failing, databases)
    writeRows(path, ["two"])
    await expect(down.engine.syncNow(did)).rejects.toThrow(/connection refused/)
    expect(pointerOf(inner)).toEqual(before)
    writeRows(path, ["three"])
    expect((await a.engine.syncNow(did))._tag).toBe("Uploaded")
    expect(pointerOf(inner)?.previousSha256).toBe(before.sha256)
  })

  it("does not make another host's later snapshot look like this host's own", async () => {
    const { store, inner, state, databases, path } = setup()
    const a = engineOn(store, databases)
    writeRows(path, ["a1"])
    await a.engine.syncNow(did)
    writeRows(path, ["a2"])
    state.loseAck = true
    await expect(a.engine.syncNow(did)).rejects.toThrow()
    state.loseAck = false
    // Host B picks the user up from the snapshot that landed and moves the room on.
    const bDir = tempDir("lineage-ack-b")
    cleanups.push(bDir.cleanup)
    const bDatabases = userDatabaseDirectory(bDir.path)
    const b = engineOn(store, bDatabases)
    expect((await b.engine.restore(did))._tag).toBe("Restored")
    writeRows(bDatabases.databasePath(did), ["b3"])
    expect((await b.engine.syncNow(did))._tag).toBe("Uploaded")
    const bs = pointerOf(inner)!
    // A, which never saw B's snapshot, is refused.
    writeRows(path, ["a3"])
    expect(await a.engine.syncNow(did)).toMatchObject({ _tag: "Refused", reason: "diverged" })
    expect(pointerOf(inner)).toEqual(bs)
  })
})

describe("a sync record speaks for its own file only", () => {
  it("a sync waiting for a turn that moves the damaged file aside uploads nothing over the room", async () => {
    const store = memorySnapshotStore()
    const dir = tempDir("lineage-waiting")
    cleanups.push(dir.cleanup)
    const openErrors: Array<SqliteOpenError> = []
    const registry = new UserDatabaseRegistry({
      directory: dir.path,
      retention: false,
      connection: { verify: "none" }, // the damage is found mid-operation, as on a live host
      onOpenError: (e) => openErrors.push(e)
    })
    cleanups.push(() => registry.close())
    let lockAsked = () => {}
    const { engine } = engineOn(store, {
      databasePath: (d) => registry.databasePath(d),
      storageKey: (d) => registry.storageKey(d),
      withUserWriteLock: (d, fn) => {
        lockAsked()
        return registry.withUserWriteLock(d, fn)
      }
    })
    const saver = registry.checkpointerForUser(did)
    let config: RunnableConfig = { configurable: { thread_id: "t", checkpoint_ns: "" } }
    for (let step = 1; step <= 40; step++) {
      config = await saver.put(
        config,
        conversationCheckpoint(step),
        { source: "loop", step, parents: {} },
        {
          messages: step + 1,
          step: step + 1
        }
      )
    }
    expect((await engine.syncNow(did))._tag).toBe("Uploaded")
    const good = pointerOf(store)!
    const path = registry.databasePath(did)

    let sync: Promise<unknown> | undefined
    await registry.withTurn(did, async () => {
      await saver.put(
        config,
        conversationCheckpoint(41),
        { source: "loop", step: 41, parents: {} },
        {
          messages: 42,
          step: 42
        }
      )
      // The debounced sync starts now and waits for the turn to end.
      const asked = new Promise<void>((r) => (lockAsked = r))
      sync = engine.syncNow(did)
      await asked
      // The turn then finds the file damaged: it is moved aside and a fresh one started.
      await registry.use(did, "read", (db) => db.db.pragma("wal_checkpoint(TRUNCATE)"))
      const bytes = readFileSync(path)
      bytes.fill(0xff, 2 * 4096, bytes.length - 4096)
      writeFileSync(path, bytes)
      await expect(saver.getTuple({ configurable: { thread_id: "t" } })).rejects.toThrow()
      await saver.put(
        { configurable: { thread_id: "t", checkpoint_ns: "" } },
        conversationCheckpoint(1),
        { source: "loop", step: 1, parents: {} },
        { messages: 2, step: 2 }
      )
    })
    expect(openErrors.map((e) => e.reason)).toEqual(["corrupt"])
    expect(await sync).toMatchObject({ _tag: "Refused", reason: "diverged" })
    expect(pointerOf(store)).toEqual(good)
  })

  it.each([
    ["", false],
    [", even on the old file's inode, on a file system without birth times", true]
  ])(
    "a database deleted while its record stayed: the new one is never taken for the old one%s",
    async (_, reused) => {
      const inner = memorySnapshotStore()
      const store = flakyStore(inner)
      const dir = tempDir("lineage-orphan")
      cleanups.push(dir.cleanup)
      const first = new UserDatabaseRegistry({ directory: dir.path })
      const { engine: before } = engineOn(store, first)
      await first.use(did, "write", (db) =>
        db.statement("INSERT INTO plugboard_meta (key, value) VALUES ('turn-1', 'years of history')").run()
      )
      expect((await before.syncNow(did))._tag).toBe("Uploaded")
      const good = pointerOf(inner)!
      before.close()
      await first.close()
      // An operator's `rm`, or a crash half-way through a move: the file goes, its record stays.
      const path = first.databasePath(did)
      for (const suffix of ["", "-wal", "-shm"]) rmSync(path + suffix, { force: true })
      expect(existsSync(ledgerPath(path))).toBe(true)

      // Restarted; the homeserver is down at the user's first request, whose turn starts afresh.
      const registry = new UserDatabaseRegistry({ directory: dir.path })
      cleanups.push(() => registry.close())
      const { engine } = engineOn(store, registry, { retry: { baseMs: 10_000 } })
      store.down = true
      expect((await engine.restore(did))._tag).toBe("Unavailable")
      await registry.use(did, "write", (db) =>
        db.statement("INSERT INTO plugboard_meta (key, value) VALUES ('turn-2', 'on an empty state')").run()
      )
      if (reused) {
        // ext4 hands a freed inode out again at once, and without birth times the inode is all a
        // file system can tell: the record then names the new file's inode as the old one's.
        const record = JSON.parse(readFileSync(ledgerPath(path), "utf8"))
        const now = fileIdentity(path)!
        writeFileSync(
          ledgerPath(path),
          JSON.stringify({ ...record, file: { ...record.file, ino: now.ino, birth: "0" } })
        )
        expect(sameFile({ ino: now.ino, birth: "0" }, { ino: now.ino, birth: "0" })).toBe(true)
        expect(record.file.id).toBeDefined()
        expect(record.file.id).not.toBe(now.id)
      }
      store.down = false
      // Its next sync restores first: the room's state comes back (nothing is uploaded over it),
      // and the turn written on the new file is kept beside it.
      expect((await engine.syncNow(did))._tag).toBe("Unchanged")
      expect(pointerOf(inner)).toEqual(good)
      const keys = await registry.use(did, "read", (db) =>
        (
          db.statement("SELECT key FROM plugboard_meta WHERE key LIKE 'turn-%'").all() as Array<{
            key: string
          }>
        ).map((r) => r.key)
      )
      expect(keys).toEqual(["turn-1"])
      expect(readdirSync(dir.path).filter((f) => /\.conflict-[^.]*$/.test(f))).toHaveLength(1)
    }
  )

  it("a data directory copied to another host, record included, keeps its lineage (its file id)", async () => {
    const store = memorySnapshotStore()
    const a = tempDir("lineage-copy-a")
    const b = tempDir("lineage-copy-b")
    cleanups.push(a.cleanup, b.cleanup)
    const first = new UserDatabaseRegistry({ directory: a.path })
    const { engine: before } = engineOn(store, first)
    const remember = (registry: UserDatabaseRegistry, key: string) =>
      registry.use(did, "write", (db) =>
        db.statement("INSERT INTO plugboard_meta (key, value) VALUES (?, 'x')").run(key)
      )
    await remember(first, "turn-1")
    expect((await before.syncNow(did))._tag).toBe("Uploaded")
    await remember(first, "turn-2 (answered, not synced yet)")
    before.close()
    await first.close()
    cpSync(a.path, b.path, { recursive: true })

    const second = new UserDatabaseRegistry({ directory: b.path })
    cleanups.push(() => second.close())
    const { engine } = engineOn(store, second)
    expect(fileIdentity(second.databasePath(did))?.ino).not.toBe(fileIdentity(first.databasePath(did))?.ino)
    expect(await engine.restore(did)).toEqual({ _tag: "LocalPresent" })
    expect((await engine.syncNow(did))._tag).toBe("Uploaded")
    expect(readdirSync(b.path).filter((f) => f.includes(".conflict-"))).toEqual([])
  })

  it("a record written before records named their file is taken as it is (an upgrade keeps unsynced turns)", async () => {
    const store = memorySnapshotStore()
    const dir = tempDir("lineage-legacy")
    cleanups.push(dir.cleanup)
    const registry = new UserDatabaseRegistry({ directory: dir.path })
    cleanups.push(() => registry.close())
    const { engine } = engineOn(store, registry)
    await registry.use(did, "write", (db) =>
      db.statement("INSERT INTO plugboard_meta VALUES ('turn-1', 'x')").run()
    )
    await engine.syncNow(did)
    const path = registry.databasePath(did)
    const { file: _file, ...legacy } = JSON.parse(readFileSync(ledgerPath(path), "utf8"))
    writeFileSync(ledgerPath(path), JSON.stringify(legacy))
    await registry.use(did, "write", (db) =>
      db.statement("INSERT INTO plugboard_meta VALUES ('turn-2', 'x')").run()
    )
    const { engine: upgraded } = engineOn(store, registry)
    expect(await upgraded.restore(did)).toEqual({ _tag: "LocalPresent" })
    expect((await upgraded.syncNow(did))._tag).toBe("Uploaded")
  })
})
