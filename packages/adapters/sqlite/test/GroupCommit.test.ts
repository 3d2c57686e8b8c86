/**
 * The group commit of `Database.write`: writes asked for in one turn of the event loop share one
 * transaction, each in a savepoint of its own, so one that throws fails alone and the rest land;
 * groups commit in order; a read sees every write asked for before it; `close` commits what waits.
 * The same mechanism with the run store's options: no async busy retry, errors the caller's own.
 */
import { join } from "node:path"
import BetterSqlite3 from "better-sqlite3"
import fc from "fast-check"
import { afterEach, describe, expect, it } from "vitest"
import { Database } from "../src/Database.js"
import { SqliteStorageError } from "../src/errors.js"
import { GroupCommit } from "../src/internal/groupCommit.js"
import { tempDir } from "./helpers.js"

let cleanups: Array<() => void> = []
afterEach(() => {
  for (const c of cleanups) c()
  cleanups = []
})

const open = (): Database => {
  const { dir, cleanup } = tempDir()
  const db = Database.open({ filename: join(dir, "user.sqlite"), verify: "none" })
  db.db.exec("CREATE TABLE IF NOT EXISTS items (k TEXT PRIMARY KEY, v INTEGER NOT NULL)")
  cleanups.push(() => {
    db.close()
    cleanup()
  })
  return db
}

const insert = (db: Database, k: string, v: number) => () =>
  db.statement("INSERT INTO items (k, v) VALUES (?, ?)").run(k, v).changes
const rows = (db: Database) =>
  db.db.prepare("SELECT k, v FROM items ORDER BY k").all() as Array<{ k: string; v: number }>

describe("Database group commit", () => {
  it("commits the writes of one turn of the event loop as one transaction", async () => {
    const db = open()
    const before = db.commits
    const results = await Promise.all([1, 2, 3, 4, 5].map((v) => db.write(insert(db, `k${v}`, v))))
    expect(results).toEqual([1, 1, 1, 1, 1])
    expect(db.commits - before).toBe(1)
    expect(rows(db)).toHaveLength(5)
    // Writes asked for after an await are the next group.
    await db.write(insert(db, "k6", 6))
    expect(db.commits - before).toBe(2)
  })

  it("fails only the write that threw, for any mix of good and failing writes", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ key: fc.constantFrom("a", "b", "c", "d", "e", "f"), fails: fc.boolean() }), {
          minLength: 1,
          maxLength: 12
        }),
        async (writes) => {
          const db = open()
          const before = db.commits
          const outcomes = await Promise.allSettled(
            writes.map((w, i) =>
              db.write(() => {
                // A failing write changes the table before it throws: the savepoint undoes it.
                db.statement("INSERT OR REPLACE INTO items (k, v) VALUES (?, ?)").run(w.key, i)
                if (w.fails) throw new Error(`write ${i} refused`)
                return i
              })
            )
          )
          const expected = new Map<string, number>()
          writes.forEach((w, i) => {
            if (!w.fails) expected.set(w.key, i)
          })
          outcomes.forEach((o, i) => {
            if (writes[i]!.fails) {
              expect(o.status).toBe("rejected")
              expect(((o as PromiseRejectedResult).reason as Error).message).toBe(`write ${i} refused`)
            } else expect(o).toEqual({ status: "fulfilled", value: i })
          })
          expect(rows(db)).toEqual([...expected].sort().map(([k, v]) => ({ k, v })))
          // One transaction; a lone write that throws rolls it back whole instead.
          expect(db.commits - before).toBe(writes.length === 1 && writes[0]!.fails ? 0 : 1)
        }
      ),
      { numRuns: 60 }
    )
  })

  it("lets a read see every write asked for before it, awaited or not", async () => {
    const db = open()
    void db.write(insert(db, "x", 1))
    const seen = await db.read(() => rows(db))
    expect(seen).toEqual([{ k: "x", v: 1 }])
  })

  it("keeps the order in which writes were asked for, across groups", async () => {
    const db = open()
    const order: Array<number> = []
    const first = db.write(() => order.push(1))
    await Promise.resolve()
    const second = db.write(() => order.push(2))
    await Promise.all([first, second])
    setImmediate(() => void db.write(() => order.push(3)))
    // Immediates run in order: once this one has, the third write has been asked for.
    await new Promise((resolve) => setImmediate(resolve))
    await db.read(() => undefined)
    expect(order).toEqual([1, 2, 3])
  })

  it("commits waiting writes on close, and refuses writes after it", async () => {
    const db = open()
    const pending = db.write(insert(db, "late", 1))
    const filename = db.filename
    db.close()
    await expect(pending).resolves.toBe(1)
    const again = Database.open({ filename, verify: "none" })
    cleanups.push(() => again.close())
    expect(again.db.prepare("SELECT v FROM items WHERE k = 'late'").get()).toEqual({ v: 1 })
    await expect(db.write(insert(db, "after", 1))).rejects.toMatchObject({ reason: "closed" })
  })
})

describe("GroupCommit's options (the run store's: no async retry, its own errors)", () => {
  const wrapped = (error: unknown) => ({ wrapped: error })

  it("with busyRetryMs 0, a locked file fails the group at once, through failure; then writes go on", async () => {
    const { dir, cleanup } = tempDir()
    const filename = join(dir, "runs.sqlite")
    const db = new BetterSqlite3(filename, { timeout: 0 })
    db.pragma("journal_mode = WAL")
    db.exec("CREATE TABLE items (k TEXT PRIMARY KEY, v INTEGER NOT NULL)")
    const other = new BetterSqlite3(filename, { timeout: 0 })
    cleanups.push(() => {
      other.close()
      db.close()
      cleanup()
    })
    const groups = new GroupCommit(db, { filename, busyRetryMs: 0, failure: wrapped })
    const put = (k: string) => () => db.prepare("INSERT INTO items (k, v) VALUES (?, 1)").run(k).changes
    other.exec("BEGIN IMMEDIATE")
    const refused = await Promise.allSettled([groups.write(put("a")), groups.write(put("b"))])
    for (const r of refused) {
      expect(r.status).toBe("rejected")
      const reason = (r as PromiseRejectedResult).reason as { wrapped: SqliteStorageError }
      expect(reason.wrapped).toBeInstanceOf(SqliteStorageError)
      expect(reason.wrapped.reason).toBe("busy")
    }
    expect([groups.busyRetries, groups.commits]).toEqual([0, 0])
    other.exec("ROLLBACK")
    await expect(groups.write(put("c"))).resolves.toBe(1)
    expect(groups.commits).toBe(1)
    expect(await groups.read(() => db.prepare("SELECT k FROM items").pluck().all())).toEqual(["c"])
  })

  it("a write's own error reaches its caller through failure; close refuses later writes", async () => {
    const { dir, cleanup } = tempDir()
    const filename = join(dir, "runs.sqlite")
    const db = new BetterSqlite3(filename)
    cleanups.push(() => {
      db.close()
      cleanup()
    })
    const groups = new GroupCommit(db, { filename, busyRetryMs: 0, failure: wrapped })
    const refusal = new Error("refused")
    const outcomes = await Promise.allSettled([
      groups.write(() => 1),
      groups.write(() => {
        throw refusal
      })
    ])
    expect(outcomes).toEqual([
      { status: "fulfilled", value: 1 },
      { status: "rejected", reason: { wrapped: refusal } }
    ])
    groups.close()
    await expect(groups.write(() => 2)).rejects.toMatchObject({ wrapped: { reason: "closed" } })
  })
})
