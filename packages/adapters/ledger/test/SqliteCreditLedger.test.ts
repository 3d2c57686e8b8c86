import { execFile } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { Clock, type CreditLedger } from "@plugboard/core"
import { CreditLedgerConformance } from "@plugboard/testing"
import Database from "better-sqlite3"
import { Effect, Exit } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { SqliteCreditLedger } from "../src/index.js"

const root = mkdtempSync(join(tmpdir(), "plugboard-ledger-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))
let counter = 0
const freshPath = () => join(root, `ledger-${process.pid}-${++counter}.db`)

const open = (filename: string) => SqliteCreditLedger.make({ filename }).pipe(Effect.provide(Clock.layer))

CreditLedgerConformance.run(
  "sqlite",
  () => {
    const filename = freshPath()
    return Effect.flatMap(Clock.makeTest(1_700_000_000_000), (clock) => {
      // Both handles read the same test clock, so a reservation expires for both at once.
      const at = (f: string) =>
        SqliteCreditLedger.make({ filename: f }).pipe(Effect.provideService(Clock.Clock, clock))
      return Effect.map(at(filename), (ledger) => ({ ledger, reopen: () => at(filename), clock }))
    })
  },
  { numRuns: 40 }
)

const ALICE = "did:key:z6MkAlice"

const openExit = (filename: string) => Effect.runPromiseExit(Effect.scoped(open(filename)))

const failureReason = (exit: Exit.Exit<unknown, CreditLedger.CreditLedgerError>) =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error.reason : `not a failure: ${exit._tag}`

const withLedger = <A>(
  filename: string,
  body: (ledger: CreditLedger.CreditLedgerService) => Effect.Effect<A, unknown>
) => Effect.runPromise(Effect.scoped(Effect.flatMap(open(filename), body)))

describe("SqliteCreditLedger", () => {
  it("keeps balances across a close and reopen, in WAL mode", async () => {
    const filename = freshPath()
    await withLedger(filename, (ledger) => ledger.topUp(ALICE, 25, "seed"))
    const balance = await withLedger(filename, (ledger) => ledger.balance(ALICE))
    expect(balance).toBe(25)
    const db = new Database(filename, { readonly: true })
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal")
    expect(db.pragma("application_id", { simple: true })).toBe(SqliteCreditLedger.APPLICATION_ID)
    db.close()
  })

  it("creates the missing parent directory", async () => {
    const filename = join(root, "nested", "deeper", "ledger.db")
    expect(await withLedger(filename, (ledger) => ledger.balance(ALICE))).toBe(0)
  })

  it("refuses a file that is not a database, and leaves it untouched", async () => {
    const filename = freshPath()
    const garbage = Buffer.from("this is not a sqlite database, just some bytes\n".repeat(100))
    writeFileSync(filename, garbage)
    const exit = await openExit(filename)
    expect(failureReason(exit)).toBe("corrupt")
    expect(Exit.isFailure(exit) && exit.cause._tag === "Fail" && exit.cause.error.message).toMatch(/corrupt/)
    expect(readFileSync(filename).equals(garbage)).toBe(true)
  })

  it("refuses a ledger whose pages were damaged, and leaves it untouched", async () => {
    const filename = freshPath()
    await withLedger(filename, (ledger) =>
      Effect.forEach(
        Array.from({ length: 300 }, (_, i) => i),
        (i) => ledger.topUp(`did:key:z${i}`, i + 1, "x".repeat(200))
      )
    )
    // Fold the WAL into the main file, then overwrite the middle of it with noise.
    const db = new Database(filename)
    db.pragma("wal_checkpoint(TRUNCATE)")
    db.close()
    const bytes = readFileSync(filename)
    expect(bytes.length).toBeGreaterThan(3 * 4096)
    for (let i = 4096 + 100; i < 3 * 4096; i++) bytes[i] = (i * 7919) & 0xff
    writeFileSync(filename, bytes)
    const exit = await openExit(filename)
    expect(failureReason(exit)).toBe("corrupt")
    expect(readFileSync(filename).equals(bytes)).toBe(true)
  })

  it("refuses another application's database and a newer schema", async () => {
    const foreign = freshPath()
    const db = new Database(foreign)
    db.exec("CREATE TABLE users (id INTEGER PRIMARY KEY)")
    db.close()
    const foreignBytes = readFileSync(foreign)
    expect(failureReason(await openExit(foreign))).toBe("incompatible")
    // Refused, and left byte for byte as it was (the switch to WAL rewrote its header).
    expect(readFileSync(foreign).equals(foreignBytes)).toBe(true)

    const other = freshPath()
    const db2 = new Database(other)
    db2.pragma("application_id = 1234")
    db2.close()
    const otherBytes = readFileSync(other)
    expect(failureReason(await openExit(other))).toBe("incompatible")
    expect(readFileSync(other).equals(otherBytes)).toBe(true)

    const newer = freshPath()
    await withLedger(newer, (ledger) => ledger.topUp(ALICE, 1))
    const db3 = new Database(newer)
    db3.pragma(`user_version = ${SqliteCreditLedger.SCHEMA_VERSION + 1}`)
    db3.close()
    expect(failureReason(await openExit(newer))).toBe("incompatible")
  })

  it("reports a ledger whose tables were dropped as corrupt", async () => {
    const filename = freshPath()
    await withLedger(filename, (ledger) => ledger.topUp(ALICE, 1))
    const db = new Database(filename)
    db.exec("DROP TABLE entries")
    db.close()
    expect(failureReason(await openExit(filename))).toBe("corrupt")
  })

  it("migrates a version-1 file (before reservations): balances and history kept, reservations work", async () => {
    const filename = freshPath()
    // A ledger exactly as version 1 wrote it: its schema, its pragmas, one user's history.
    const old = new Database(filename)
    old.exec(`
      CREATE TABLE accounts (did TEXT PRIMARY KEY, balance INTEGER NOT NULL CHECK (balance >= 0)) STRICT;
      CREATE TABLE entries (
        id INTEGER PRIMARY KEY AUTOINCREMENT, did TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('top-up', 'deduct')),
        requested INTEGER NOT NULL CHECK (requested > 0),
        amount INTEGER NOT NULL CHECK (amount >= 0 AND amount <= requested),
        balance_after INTEGER NOT NULL CHECK (balance_after >= 0),
        reason TEXT, at INTEGER NOT NULL) STRICT;
      CREATE INDEX entries_by_did ON entries (did, id);
      INSERT INTO accounts VALUES ('${ALICE}', 7);
      INSERT INTO entries (did, kind, requested, amount, balance_after, reason, at)
        VALUES ('${ALICE}', 'top-up', 10, 10, 10, 'seed', 1), ('${ALICE}', 'deduct', 3, 3, 7, NULL, 2);
    `)
    old.pragma(`application_id = ${SqliteCreditLedger.APPLICATION_ID}`)
    old.pragma("user_version = 1")
    old.close()
    expect(SqliteCreditLedger.SCHEMA_VERSION).toBe(2)
    const [balance, history, settled, available] = await withLedger(filename, (ledger) =>
      Effect.gen(function* () {
        const balance = yield* ledger.balance(ALICE)
        const history = yield* ledger.history(ALICE)
        const r = yield* ledger.reserve(ALICE, 5, { ttlMs: 60_000 })
        const settled = yield* ledger.settle(ALICE, r.id, 2)
        return [balance, history, settled, yield* ledger.available(ALICE)] as const
      })
    )
    expect(balance).toBe(7)
    expect(history.map((e) => [e.kind, e.amount, e.balanceAfter, e.reason])).toEqual([
      ["deduct", 3, 7, undefined],
      ["top-up", 10, 10, "seed"]
    ])
    expect(settled).toMatchObject({ charged: 2, released: 3, balance: 5 })
    expect(available).toBe(5)
    const db = new Database(filename, { readonly: true })
    expect(db.pragma("user_version", { simple: true })).toBe(2)
    db.close()
    // Opening it again (now version 2) changes nothing more.
    expect(await withLedger(filename, (ledger) => ledger.balance(ALICE))).toBe(5)
  })

  it("reports a path it cannot open as unavailable", async () => {
    const exit = await openExit(root) // a directory
    expect(failureReason(exit)).toBe("unavailable")
  })

  it("never loses a deduct across processes writing the same file", async () => {
    const filename = freshPath()
    await withLedger(filename, (ledger) => ledger.topUp(ALICE, 300))
    const worker = join(import.meta.dirname, "deduct-worker.ts")
    const run = promisify(execFile)
    const processes = 3
    const each = 200
    const barrier = mkdtempSync(join(root, "barrier-"))
    const args = [worker, filename, ALICE, String(each), barrier, String(processes)]
    await Promise.all(
      Array.from({ length: processes }, () =>
        run(process.execPath, ["--conditions=@plugboard/source", "--import", "tsx", ...args], {
          cwd: process.cwd()
        })
      )
    )
    const [balance, history] = await withLedger(filename, (ledger) =>
      Effect.all([ledger.balance(ALICE), ledger.history(ALICE, 1000)])
    )
    const deducts = history.filter((e) => e.kind === "deduct")
    expect(deducts).toHaveLength(processes * each)
    expect(deducts.reduce((sum, e) => sum + e.amount, 0)).toBe(300)
    expect(balance).toBe(0)
    // The writers really overlapped (the workers meet half-way, so every first half precedes
    // every second half): the history alternates between processes more often than running
    // them one after another would (processes − 1 switches).
    const order = [...deducts].reverse().map((e) => e.reason)
    const switches = order.filter((reason, i) => i > 0 && reason !== order[i - 1]).length
    expect(switches).toBeGreaterThan(processes - 1)
  }, 120_000)
})
