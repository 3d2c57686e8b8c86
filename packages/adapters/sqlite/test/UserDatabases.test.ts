import { existsSync, readdirSync } from "node:fs"
import { basename, dirname } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { databaseFileName, SqliteStorageError, UserDatabaseRegistry } from "../src/index.js"
import { conversationCheckpoint, tempDir } from "./helpers.js"

const hostile = [
  "did:key:alice",
  "did:key:ALICE",
  "did:key:аlice", // Cyrillic а: looks the same, is another user
  "did:key:alice\u0000",
  "did:key:alice\u0000../../x",
  "../",
  "../../etc/passwd",
  "/",
  "/tmp/evil",
  ".",
  "..",
  "did:key:e\u0301", // e + combining accent
  "did:key:é", // precomposed é: NOT merged with the line above
  "did:key:" + "z".repeat(100_000),
  "🙂",
  "did:key:\uFFFD", // the replacement character itself: a valid DID string of its own
  "did:key:\uD83D\uDE42", // a surrogate pair (🙂) is fine
  "C:\\Windows\\system32",
  'a/b\\c:d*e?f"g<h>i|j'
]

let cleanups: Array<() => void> = []
afterEach(() => {
  for (const c of cleanups) c()
  cleanups = []
})
const registry = (options: Partial<ConstructorParameters<typeof UserDatabaseRegistry>[0]> = {}) => {
  const { dir, cleanup } = tempDir()
  const r = new UserDatabaseRegistry({ directory: dir, ...options })
  cleanups.push(() => {
    void r.close()
    cleanup()
  })
  return r
}

describe("UserDatabaseRegistry file names", () => {
  it("keeps every hostile DID inside the directory, fixed-length, and distinct", () => {
    const r = registry()
    const names = hostile.map(databaseFileName)
    expect(new Set(names).size).toBe(hostile.length)
    for (const [i, did] of hostile.entries()) {
      const path = r.databasePath(did)
      expect(dirname(path)).toBe(r.directory)
      expect(basename(path)).toMatch(/^u-[0-9a-f]{64}\.sqlite$/)
      expect(basename(path)).toBe(names[i])
    }
    expect(databaseFileName("did:key:x")).toBe(databaseFileName("did:key:x"))
  })

  it("refuses an empty or non-string DID", () => {
    const r = registry()
    expect(() => r.databasePath("")).toThrow(SqliteStorageError)
    expect(() => r.checkpointerForUser(undefined as unknown as string)).toThrow(SqliteStorageError)
  })

  it("refuses a DID with a lone surrogate, which would share the key of its U+FFFD twin", async () => {
    const r = registry()
    for (const lone of ["did:key:\uD800", "did:key:a\uDC00b", "\uDBFF", "did:key:\uDE42\uD83D"]) {
      expect(() => databaseFileName(lone)).toThrow(/lone surrogate/)
      expect(() => r.checkpointerForUser(lone)).toThrow(SqliteStorageError)
      await expect(r.use(lone, "read", () => 1)).rejects.toThrow(/lone surrogate/)
    }
    expect(databaseFileName("did:key:\uFFFD")).toMatch(/^u-[0-9a-f]{64}\.sqlite$/)
    expect(readdirSync(r.directory)).toEqual([])
  })

  it("stores each hostile DID's checkpoints in its own file, and only there", async () => {
    const r = registry({ maxOpen: 4 })
    for (const [i, did] of hostile.entries()) {
      await r
        .checkpointerForUser(did)
        .put(
          { configurable: { thread_id: "t" } },
          conversationCheckpoint(i + 1),
          { source: "loop", step: i, parents: {} },
          { messages: i + 2 }
        )
    }
    expect(readdirSync(r.directory).filter((f) => f.endsWith(".sqlite"))).toHaveLength(hostile.length)
    for (const [i, did] of hostile.entries()) {
      const tuple = await r.checkpointerForUser(did).getTuple({ configurable: { thread_id: "t" } })
      expect(tuple?.metadata?.step).toBe(i)
    }
    expect(r.openCount).toBeLessThanOrEqual(4)
  })
})

describe("UserDatabaseRegistry connection cache", () => {
  it("closes the least recently used connection beyond maxOpen", async () => {
    const r = registry({ maxOpen: 2 })
    const handle = (did: string) => r.use(did, "read", (db) => db)
    const a = await handle("a")
    const b = await handle("b")
    // Touch "a" again: "b" is now the least recently used, although "a" was opened first.
    expect(await handle("a")).toBe(a)
    const c = await handle("c")
    expect(r.openCount).toBe(2)
    expect([a.isClosed, b.isClosed, c.isClosed]).toEqual([false, true, false])
    // The order follows use, not opening: touch "c", then open "d" → "a" goes.
    await handle("c")
    const d = await handle("d")
    expect([a.isClosed, c.isClosed, d.isClosed]).toEqual([true, false, false])
    expect(r.openCount).toBe(2)
    // "a" was evicted; using it again reopens it transparently.
    await r.use("a", "write", (db) => db.statement("INSERT INTO plugboard_meta VALUES ('k', 'v')").run())
    expect(r.openCount).toBe(2)
    expect(
      await r.use("a", "read", (db) => db.statement("SELECT value FROM plugboard_meta WHERE key='k'").get())
    ).toEqual({
      value: "v"
    })
  })

  it("never closes a connection in use: a turn keeps its user's connection open", async () => {
    const r = registry({ maxOpen: 1 })
    let release!: () => void
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    let opened!: () => void
    const inUse = new Promise<void>((resolve) => {
      opened = resolve
    })
    const turn = r.withTurn("busy-user", async () => {
      const first = await r.use("busy-user", "read", (db) => db)
      opened()
      await held
      // The very same connection, although three other users came and went meanwhile.
      const second = await r.use("busy-user", "read", (db) => db)
      return first === second && !second.isClosed
    })
    await inUse
    for (const did of ["x", "y", "z"]) await r.use(did, "read", () => 1)
    // Each idle user's connection was closed right after use; busy-user's one stayed open.
    expect(r.openCount).toBe(1)
    release()
    expect(await turn).toBe(true)
    await r.use("x", "read", () => 1)
    expect(r.openCount).toBe(1)
  })

  it("a saver stays valid across its connection's eviction", async () => {
    const r = registry({ maxOpen: 1 })
    const saver = r.checkpointerForUser("u1")
    const config = await saver.put(
      { configurable: { thread_id: "t" } },
      conversationCheckpoint(2),
      {
        source: "loop",
        step: 2,
        parents: {}
      },
      { messages: 3, step: 3, loadedPlugins: 1 }
    )
    await r.use("u2", "read", () => 1)
    expect((await saver.getTuple(config))?.checkpoint.channel_values.step).toBe(2)
  })
})

describe("UserDatabaseRegistry write lock (Matrix sync hook)", () => {
  it("waits for running turns, holds new ones back, then lets them run", async () => {
    const r = registry()
    const events: Array<string> = []
    let endTurn!: () => void
    const turn1 = r.withTurn("u", async () => {
      events.push("turn1 start")
      await new Promise<void>((resolve) => {
        endTurn = resolve
      })
      await r.use("u", "write", (db) => db.statement("INSERT INTO plugboard_meta VALUES ('t1', 'x')").run())
      events.push("turn1 end")
    })
    await Promise.resolve()
    const locked = r.withUserWriteLock("u", async (db) => {
      events.push("lock")
      expect(existsSync(db.path)).toBe(true)
      await db.backup(`${db.path}.bak`)
      events.push("backup done")
    })
    // No wait here: the lock is queued the moment it is asked, so the turn asked next is held back.
    const turn2 = r.withTurn("u", async () => {
      events.push("turn2")
    })
    const other = r.withTurn("someone-else", async () => {
      events.push("other user")
    })
    await other
    expect(events).toEqual(["turn1 start", "other user"])
    endTurn()
    await Promise.all([turn1, locked, turn2])
    expect(events).toEqual(["turn1 start", "other user", "turn1 end", "lock", "backup done", "turn2"])
    const backup = new (await import("better-sqlite3")).default(`${r.databasePath("u")}.bak`, {
      readonly: true
    })
    expect(backup.prepare("SELECT value FROM plugboard_meta WHERE key='t1'").get()).toEqual({ value: "x" })
    backup.close()
  })

  it("closeConnection lets the file be replaced; the next operation reopens it", async () => {
    const r = registry()
    await r.use("u", "write", (db) => db.statement("INSERT INTO plugboard_meta VALUES ('k', '1')").run())
    await r.withUserWriteLock("u", async (db) => {
      db.closeConnection()
      expect(r.openCount).toBe(0)
    })
    expect(
      await r.use("u", "read", (db) => db.statement("SELECT value FROM plugboard_meta WHERE key='k'").get())
    ).toEqual({
      value: "1"
    })
  })
})

describe("UserDatabaseRegistry onWrite", () => {
  it("is told of every committed write (checkpoints, sessions, deletes), never of reads or rolled-back writes", async () => {
    const told: Array<string> = []
    const r = registry({
      onWrite: (did) => {
        told.push(did)
        throw new Error("a listener's failure") // must not make the committed write look failed
      }
    })
    const saver = r.checkpointerForUser("did:key:w")
    await saver.put(
      { configurable: { thread_id: "t", checkpoint_ns: "" } },
      conversationCheckpoint(1),
      { source: "loop", step: 1, parents: {} },
      { messages: 2 }
    )
    expect(told).toEqual(["did:key:w"])
    await saver.getTuple({ configurable: { thread_id: "t" } })
    await r.use("did:key:w", "read", (db) => db.integrityCheck())
    expect(told).toHaveLength(1)
    await expect(
      r.use("did:key:w", "write", () => {
        throw new Error("rolled back")
      })
    ).rejects.toThrow("rolled back")
    expect(told).toHaveLength(1)
    await saver.deleteThread("t")
    await r.use("did:key:other", "write", (db) =>
      db.statement("INSERT INTO plugboard_meta VALUES ('k','v')").run()
    )
    expect(told).toEqual(["did:key:w", "did:key:w", "did:key:other"])
  })

  it("writes made during a user's turns are told once, when the user's last running turn ends", async () => {
    const told: Array<string> = []
    const r = registry({ onWrite: (did) => told.push(did) })
    const write = (key: string) =>
      r.use("did:key:t", "write", (db) => db.statement("INSERT INTO plugboard_meta VALUES (?, 'x')").run(key))
    let endFirst!: () => void
    const first = r.withTurn("did:key:t", async () => {
      await write("a")
      await new Promise<void>((resolve) => {
        endFirst = resolve
      })
    })
    const second = r.withTurn("did:key:t", async () => {
      await write("b")
    })
    await second
    expect(told).toEqual([]) // the first turn still runs
    expect(r.isBusy("did:key:t")).toBe(true)
    endFirst()
    await first
    expect(told).toEqual(["did:key:t"])
    expect(r.isBusy("did:key:t")).toBe(false)
    // A turn that wrote nothing tells nothing.
    await r.withTurn("did:key:t", async () => {
      await r.use("did:key:t", "read", (db) => db.integrityCheck())
    })
    expect(told).toEqual(["did:key:t"])
  })
})
