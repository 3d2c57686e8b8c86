/**
 * The `CreditLedger` port on one SQLite file (better-sqlite3): WAL journal, every change in a
 * `BEGIN IMMEDIATE` transaction, so concurrent writers — other connections, other processes on
 * the same host — queue on SQLite's write lock (up to `busyTimeoutMs`) instead of losing an
 * update. Rules (validation, clamping, overflow) are core's; this file only stores.
 *
 * Reservations (docs/failure-modes.md) are rows of `reservations` (schema version 2; a version-1 file gains
 * the table when opened), read and written in the same `BEGIN IMMEDIATE` transaction as the
 * balance, so two reserves can never both see the same credits free. An expired row stops
 * counting at once and is deleted by the next write of its user.
 *
 * A file that is not a ledger is never touched: not a database / failing its integrity check →
 * `corrupt`; a database of another application or a newer schema → `incompatible`.
 */
import { closeSync, mkdirSync, openSync, readSync, statSync } from "node:fs"
import { dirname } from "node:path"
import { Clock, CreditLedger, describe } from "@plugboard/core"
import Database from "better-sqlite3"
import { Effect, Layer, type Scope } from "effect"

type Service = CreditLedger.CreditLedgerService
type Entry = CreditLedger.LedgerEntry
const { CreditLedgerError } = CreditLedger

/** Options of the SQLite ledger. */
export interface SqliteCreditLedgerOptions {
  /** Path of the ledger database file; its directory is created if missing. */
  readonly filename: string
  /** How long a write waits for another writer's lock before failing `unavailable` (default 5000). */
  readonly busyTimeoutMs?: number
}

/** `PRAGMA application_id` of a plugboard ledger ("PBLG"), so foreign databases are recognised. */
export const APPLICATION_ID = 0x50424c47
/** Schema version written to `PRAGMA user_version` (1: balances and entries; 2: + reservations). */
export const SCHEMA_VERSION = 2

const SQLITE_HEADER = "SQLite format 3\0"

const SCHEMA = `
CREATE TABLE accounts (
  did TEXT PRIMARY KEY,
  balance INTEGER NOT NULL CHECK (balance >= 0)
) STRICT;
CREATE TABLE entries (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  did TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('top-up', 'deduct')),
  requested INTEGER NOT NULL CHECK (requested > 0),
  amount INTEGER NOT NULL CHECK (amount >= 0 AND amount <= requested),
  balance_after INTEGER NOT NULL CHECK (balance_after >= 0),
  reason TEXT,
  at INTEGER NOT NULL
) STRICT;
CREATE INDEX entries_by_did ON entries (did, id);
`

/** Version 1 → 2: the reservations. AUTOINCREMENT, so a settled reservation's id is never reissued. */
const RESERVATIONS = `
CREATE TABLE reservations (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  did TEXT NOT NULL,
  amount INTEGER NOT NULL CHECK (amount > 0),
  expires_at INTEGER NOT NULL
) STRICT;
CREATE INDEX reservations_by_did ON reservations (did, expires_at);
`

interface EntryRow {
  readonly id: number
  readonly did: string
  readonly kind: string
  readonly requested: number
  readonly amount: number
  readonly balance_after: number
  readonly reason: string | null
  readonly at: number
}

const sqliteCode = (error: unknown): string =>
  typeof error === "object" && error !== null && typeof (error as { code?: unknown }).code === "string"
    ? (error as { code: string }).code
    : ""

/** Maps a driver error onto the port's error, keeping SQLite's own words. */
const toLedgerError = (filename: string, error: unknown): CreditLedger.CreditLedgerError => {
  if (error instanceof CreditLedgerError) return error
  const code = sqliteCode(error)
  const detail = describe(error)
  if (code.startsWith("SQLITE_CORRUPT") || code === "SQLITE_NOTADB") {
    return new CreditLedgerError({
      reason: "corrupt",
      message: `Credit ledger ${filename} is corrupt (${code}: ${detail}); it was left untouched — restore it from a backup.`
    })
  }
  return new CreditLedgerError({
    reason: "unavailable",
    message: `Credit ledger ${filename} is unavailable (${code || "error"}: ${detail}).`
  })
}

const corrupt = (filename: string, why: string) =>
  new CreditLedgerError({
    reason: "corrupt",
    message: `Credit ledger ${filename} is corrupt (${why}); it was left untouched — restore it from a backup.`
  })

/** Refuses a non-empty file whose first bytes are not SQLite's header, before SQLite sees it. */
const checkHeader = (filename: string): void => {
  let size: number
  try {
    size = statSync(filename).size
  } catch {
    return // does not exist yet: SQLite creates it
  }
  if (size === 0) return
  const fd = openSync(filename, "r")
  try {
    const header = Buffer.alloc(16)
    const read = readSync(fd, header, 0, 16, 0)
    if (read < 16 || header.toString("latin1") !== SQLITE_HEADER)
      throw corrupt(filename, "not a SQLite database")
  } finally {
    closeSync(fd)
  }
}

const open = (filename: string, busyTimeoutMs: number): Database.Database => {
  if (filename !== ":memory:") {
    mkdirSync(dirname(filename), { recursive: true })
    checkHeader(filename)
  }
  const db = new Database(filename, { timeout: busyTimeoutMs })
  try {
    const check = db.pragma("quick_check(1)", { simple: true })
    if (check !== "ok") throw corrupt(filename, `integrity check: ${String(check)}`)
    // Whose file it is, first: switching to WAL rewrites the header, and another application's
    // database (or a newer ledger) must be left exactly as it was found.
    migrate(db, filename)
    db.pragma("journal_mode = WAL")
    db.pragma("synchronous = NORMAL")
    db.pragma("foreign_keys = ON")
    return db
  } catch (error) {
    db.close()
    throw error
  }
}

const migrate = (db: Database.Database, filename: string): void => {
  db.transaction(() => {
    const applicationId = db.pragma("application_id", { simple: true }) as number
    const version = db.pragma("user_version", { simple: true }) as number
    if (applicationId === 0) {
      const tables = db
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table'")
        .pluck()
        .all() as Array<string>
      if (tables.length > 0) {
        throw new CreditLedgerError({
          reason: "incompatible",
          message: `${filename} is a database of another application (tables: ${tables.slice(0, 5).join(", ")}); refusing to use it as a credit ledger.`
        })
      }
      db.exec(SCHEMA)
      db.exec(RESERVATIONS)
      db.pragma(`application_id = ${APPLICATION_ID}`)
      db.pragma(`user_version = ${SCHEMA_VERSION}`)
      return
    }
    if (applicationId !== APPLICATION_ID) {
      throw new CreditLedgerError({
        reason: "incompatible",
        message: `${filename} belongs to another application (application_id ${applicationId}); refusing to use it as a credit ledger.`
      })
    }
    if (version === 1) {
      // A ledger written before reservations: same balances and entries, one table more.
      db.exec(RESERVATIONS)
      db.pragma(`user_version = ${SCHEMA_VERSION}`)
    } else if (version !== SCHEMA_VERSION) {
      throw new CreditLedgerError({
        reason: "incompatible",
        message: `Credit ledger ${filename} has schema version ${version}; this build reads version ${SCHEMA_VERSION}.`
      })
    }
    const tables = new Set(
      db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").pluck().all() as Array<string>
    )
    for (const table of ["accounts", "entries", "reservations"]) {
      if (!tables.has(table)) throw corrupt(filename, `table '${table}' is missing`)
    }
  }).immediate()
}

const checkedInteger = (filename: string, value: unknown, what: string): number => {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw corrupt(filename, `${what} holds ${String(value)}`)
  }
  return value
}

const toEntry = (filename: string, row: EntryRow): Entry => {
  if (row.kind !== "top-up" && row.kind !== "deduct")
    throw corrupt(filename, `entry ${row.id} has kind ${row.kind}`)
  const requested = checkedInteger(filename, row.requested, `entry ${row.id} requested`)
  const amount = checkedInteger(filename, row.amount, `entry ${row.id} amount`)
  return {
    id: String(row.id),
    did: row.did,
    kind: row.kind,
    requested,
    amount,
    shortfall: requested - amount,
    balanceAfter: checkedInteger(filename, row.balance_after, `entry ${row.id} balance`),
    reason: row.reason ?? undefined,
    at: row.at
  }
}

/**
 * Opens (creating if needed) the ledger at `options.filename` for the lifetime of the scope.
 * Fails with `corrupt`, `incompatible` or `unavailable` instead of ever resetting a file.
 */
export const make = (
  options: SqliteCreditLedgerOptions
): Effect.Effect<Service, CreditLedger.CreditLedgerError, Scope.Scope | Clock.Clock> =>
  Effect.gen(function* () {
    const clock = yield* Clock.Clock
    const filename = options.filename
    const db = yield* Effect.acquireRelease(
      Effect.try({
        try: () => open(filename, options.busyTimeoutMs ?? 5000),
        catch: (error) => toLedgerError(filename, error)
      }),
      (db) => Effect.sync(() => db.close())
    )

    const selectBalance = db.prepare<[string], { balance: number }>(
      "SELECT balance FROM accounts WHERE did = ?"
    )
    const upsertBalance = db.prepare<[string, number]>(
      "INSERT INTO accounts (did, balance) VALUES (?, ?) ON CONFLICT (did) DO UPDATE SET balance = excluded.balance"
    )
    const insertEntry = db.prepare<[string, string, number, number, number, string | null, number]>(
      "INSERT INTO entries (did, kind, requested, amount, balance_after, reason, at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING *"
    )
    const selectHistory = db.prepare<[string, number], EntryRow>(
      "SELECT * FROM entries WHERE did = ? ORDER BY id DESC LIMIT ?"
    )

    const selectHeld = db.prepare<[string, number], { held: number | null }>(
      "SELECT sum(amount) AS held FROM reservations WHERE did = ? AND expires_at > ?"
    )
    const deleteExpired = db.prepare<[string, number]>(
      "DELETE FROM reservations WHERE did = ? AND expires_at <= ?"
    )
    const insertReservation = db.prepare<[string, number, number], { id: number }>(
      "INSERT INTO reservations (did, amount, expires_at) VALUES (?, ?, ?) RETURNING id"
    )
    const takeReservation = db.prepare<[number, string], { amount: number; expires_at: number }>(
      "DELETE FROM reservations WHERE id = ? AND did = ? RETURNING amount, expires_at"
    )

    const readBalance = (did: string): number => {
      const row = selectBalance.get(did)
      return row === undefined ? 0 : checkedInteger(filename, row.balance, `balance of ${did}`)
    }

    /** The balance minus the user's live reservations (core's `available`). */
    const readAvailable = (did: string, now: number): number =>
      readBalance(did) -
      checkedInteger(filename, selectHeld.get(did, now)?.held ?? 0, `reservations of ${did}`)

    /** Removes the user's live reservation `id`, returning its amount; an expired one is removed too. */
    const take = (did: string, id: string, now: number): number => {
      const row = /^[1-9]\d{0,14}$/.test(id) ? takeReservation.get(Number(id), did) : undefined
      if (row === undefined || row.expires_at <= now) throw CreditLedger.unknownReservation(id)
      return checkedInteger(filename, row.amount, `reservation ${id}`)
    }

    const record = (
      did: string,
      kind: Entry["kind"],
      requested: number,
      amount: number,
      after: number,
      reason: string | undefined,
      at: number
    ): Entry => {
      upsertBalance.run(did, after)
      const row = insertEntry.get(did, kind, requested, amount, after, reason ?? null, at) as EntryRow
      return toEntry(filename, row)
    }

    const reserveTx = db.transaction((did: string, amount: number, ttl: number, now: number) => {
      deleteExpired.run(did, now)
      const available = readAvailable(did, now)
      if (available < amount) throw CreditLedger.insufficientCredits(did, amount, available)
      const { id } = insertReservation.get(did, amount, now + ttl)!
      return { id: String(id), did, amount, expiresAt: now + ttl }
    })

    const settleTx = db.transaction(
      (did: string, id: string, cost: number, reason: string | undefined, now: number) => {
        const reserved = take(did, id, now)
        const balance = readBalance(did)
        const moved = CreditLedger.settlement(cost, reserved, readAvailable(did, now) - reserved)
        const entry =
          cost === 0
            ? undefined
            : record(did, "deduct", cost, moved.charged, balance - moved.charged, reason, now)
        return { ...moved, balance: balance - moved.charged, entry }
      }
    )

    const releaseTx = db.transaction((did: string, id: string, now: number) => {
      take(did, id, now)
    })

    const apply = db.transaction(
      (
        did: string,
        kind: Entry["kind"],
        requested: number,
        reason: string | undefined,
        at: number
      ): Entry => {
        const balance = readBalance(did)
        if (kind === "top-up" && balance + requested > Number.MAX_SAFE_INTEGER) {
          throw CreditLedger.overflowError(did, balance, requested)
        }
        const amount = kind === "top-up" ? requested : Math.min(requested, readAvailable(did, at))
        const after = kind === "top-up" ? balance + amount : balance - amount
        return record(did, kind, requested, amount, after, reason, at)
      }
    )

    const attempt = <A>(f: () => A): Effect.Effect<A, CreditLedger.CreditLedgerError> =>
      Effect.try({ try: f, catch: (error) => toLedgerError(filename, error) })

    const write = (did: string, kind: Entry["kind"], amount: number, reason: string | undefined) =>
      Effect.flatMap(
        Effect.all([
          CreditLedger.checkDid(did),
          CreditLedger.checkAmount(amount),
          CreditLedger.checkReason(reason),
          clock.now()
        ]),
        ([d, a, r, at]) => attempt(() => apply.immediate(d, kind, a, r, at))
      )

    const service: Service = {
      balance: (did) => Effect.flatMap(CreditLedger.checkDid(did), (d) => attempt(() => readBalance(d))),
      available: (did) =>
        Effect.flatMap(Effect.all([CreditLedger.checkDid(did), clock.now()]), ([d, now]) =>
          attempt(() => readAvailable(d, now))
        ),
      reserve: (did, amount, options) =>
        Effect.flatMap(
          Effect.zip(CreditLedger.checkReserve(did, amount, options), clock.now()),
          ([[d, a, ttl], now]) => attempt(() => reserveTx.immediate(d, a, ttl, now))
        ),
      settle: (did, reservationId, actualCost, reason) =>
        Effect.flatMap(
          Effect.zip(CreditLedger.checkSettle(did, reservationId, actualCost, reason), clock.now()),
          ([[d, id, cost, r], now]) => attempt(() => settleTx.immediate(d, id, cost, r, now))
        ),
      release: (did, reservationId) =>
        Effect.flatMap(
          Effect.zip(CreditLedger.checkRelease(did, reservationId), clock.now()),
          ([[d, id], now]) => attempt(() => releaseTx.immediate(d, id, now))
        ),
      topUp: (did, amount, reason) =>
        Effect.map(write(did, "top-up", amount, reason), CreditLedger.topUpResult),
      deduct: (did, amount, reason) =>
        Effect.map(write(did, "deduct", amount, reason), CreditLedger.deductResult),
      history: (did, limit) =>
        Effect.flatMap(Effect.all([CreditLedger.checkDid(did), CreditLedger.checkLimit(limit)]), ([d, l]) =>
          attempt(() => selectHistory.all(d, l).map((row) => toEntry(filename, row)))
        )
    }
    return service
  })

/** The SQLite ledger as a layer; the database closes when the layer is released. */
export const layer = (
  options: SqliteCreditLedgerOptions
): Layer.Layer<CreditLedger.CreditLedger, CreditLedger.CreditLedgerError, Clock.Clock> =>
  Layer.scoped(CreditLedger.CreditLedger, make(options))
