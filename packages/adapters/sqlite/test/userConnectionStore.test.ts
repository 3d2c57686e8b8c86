/**
 * The ConnectionStore on the per-user databases: the port's conformance suite; a record lives in
 * the user's own file (what Matrix sync snapshots); a file of an earlier build gains the table and
 * keeps its data; the rows of an existing `connections.sqlite` move into the users' files, with
 * nothing lost, a newer record kept, and a disconnect not undone by the next start.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { ConnectionStore } from "@plugboard/core"
import { ConnectionStoreConformance } from "@plugboard/testing"
import BetterSqlite3 from "better-sqlite3"
import { Effect, Layer } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import {
  connectionsFile,
  Database,
  layerUserConnectionStore,
  layerUserDatabases,
  makeConnectionStore,
  makeUserConnectionStore,
  UserDatabaseRegistry
} from "../src/index.js"

const dirs: Array<string> = []
const freshDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "plugboard-user-connections-"))
  dirs.push(dir)
  return dir
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

ConnectionStoreConformance.run("sqlite per-user databases", () =>
  Layer.provide(layerUserConnectionStore(), layerUserDatabases({ directory: freshDir() }))
)

const ALICE = "did:key:z6MkAlice"
const BOB = "did:key:z6MkBob"

/** Runs `f` on a store over a fresh registry of `directory`, closed afterwards. */
const withUserStore = async <A>(
  directory: string,
  legacyFilename: string | undefined,
  f: (store: ConnectionStore.ConnectionStoreService) => Effect.Effect<A, unknown>
): Promise<A> => {
  const registry = new UserDatabaseRegistry({ directory })
  try {
    return await Effect.runPromise(
      Effect.scoped(
        Effect.flatMap(makeUserConnectionStore(registry, { legacyFilename }), f)
      ) as Effect.Effect<A>
    )
  } finally {
    await registry.close()
  }
}

const withLegacy = <A>(
  filename: string,
  f: (store: ConnectionStore.ConnectionStoreService) => Effect.Effect<A, unknown>
): Promise<A> =>
  Effect.runPromise(Effect.scoped(Effect.flatMap(makeConnectionStore({ filename }), f)) as Effect.Effect<A>)

const rowsOf = (filename: string, sql: string, ...params: Array<string>): Array<unknown> => {
  const db = new BetterSqlite3(filename, { readonly: true })
  try {
    return db.prepare(sql).all(...params)
  } finally {
    db.close()
  }
}

describe("per-user ConnectionStore", () => {
  it("a record is written to the user's own database file, and only there", async () => {
    const directory = freshDir()
    await withUserStore(directory, undefined, (s) => s.put(ALICE, "notes", "pbc1.sealed-alice", 5))
    const registry = new UserDatabaseRegistry({ directory })
    const alicePath = registry.databasePath(ALICE)
    const bobPath = registry.databasePath(BOB)
    await registry.close()
    expect(rowsOf(alicePath, "SELECT server, sealed, updated_at FROM connections")).toEqual([
      { server: "notes", sealed: "pbc1.sealed-alice", updated_at: 5 }
    ])
    expect(existsSync(bobPath)).toBe(false)
  })

  it("a database of an earlier build (no connections table) gains the table and keeps its sessions", async () => {
    const directory = freshDir()
    const registry = new UserDatabaseRegistry({ directory })
    const path = registry.databasePath(ALICE)
    await registry.close()
    const old = Database.open({ filename: path, ownerDid: ALICE })
    old.db.exec(
      "INSERT INTO sessions (session_id, title, created_at, updated_at) VALUES ('s1', 'kept', 1, 1)"
    )
    old.db.exec("DROP TABLE connections")
    old.close()
    expect(rowsOf(path, "SELECT name FROM sqlite_schema WHERE name = 'connections'")).toEqual([])

    await withUserStore(directory, undefined, (s) => s.put(ALICE, "notes", "sealed", 9))
    expect(rowsOf(path, "SELECT title FROM sessions")).toEqual([{ title: "kept" }])
    expect(rowsOf(path, "SELECT server FROM connections")).toEqual([{ server: "notes" }])
  })

  it("rows of an existing connections.sqlite move into each user's file on that user's first use", async () => {
    const data = freshDir()
    const legacy = connectionsFile(data)
    const users = join(data, "users")
    await withLegacy(legacy, (s) =>
      Effect.all([
        s.put(ALICE, "github", "sealed-a-github", 10),
        s.put(ALICE, "notes", "sealed-a-notes", 11),
        s.put(BOB, "notes", "sealed-b-notes", 12)
      ])
    )

    // Alice's first use reads both of her records; the old file then holds only Bob's.
    expect(await withUserStore(users, legacy, (s) => s.list(ALICE))).toEqual([
      { server: "github", sealed: "sealed-a-github", updatedAtMs: 10 },
      { server: "notes", sealed: "sealed-a-notes", updatedAtMs: 11 }
    ])
    expect(rowsOf(legacy, "SELECT user_did, server FROM connections")).toEqual([
      { user_did: BOB, server: "notes" }
    ])

    // Bob's first use is a get: it moves his record too.
    expect(await withUserStore(users, legacy, (s) => s.get(BOB, "notes"))).toEqual({
      server: "notes",
      sealed: "sealed-b-notes",
      updatedAtMs: 12
    })
    expect(rowsOf(legacy, "SELECT user_did FROM connections")).toEqual([])

    // A disconnect stays done at the next start (nothing is moved again).
    await withUserStore(users, legacy, (s) => s.remove(ALICE, "github"))
    expect(await withUserStore(users, legacy, (s) => s.list(ALICE))).toEqual([
      { server: "notes", sealed: "sealed-a-notes", updatedAtMs: 11 }
    ])
  })

  it("a moved row does not replace a newer record in the user's file; an older one is replaced", async () => {
    const data = freshDir()
    const legacy = connectionsFile(data)
    const users = join(data, "users")
    // The user's file holds a newer record for github (say, restored from another host) and an
    // older one for notes.
    await withUserStore(users, undefined, (s) =>
      Effect.all([
        s.put(ALICE, "github", "newer-in-user-file", 50),
        s.put(ALICE, "notes", "older-in-user-file", 1)
      ])
    )
    await withLegacy(legacy, (s) =>
      Effect.all([
        s.put(ALICE, "github", "older-in-host-file", 20),
        s.put(ALICE, "notes", "newer-in-host-file", 30)
      ])
    )
    expect(await withUserStore(users, legacy, (s) => s.list(ALICE))).toEqual([
      { server: "github", sealed: "newer-in-user-file", updatedAtMs: 50 },
      { server: "notes", sealed: "newer-in-host-file", updatedAtMs: 30 }
    ])
    expect(rowsOf(legacy, "SELECT user_did FROM connections")).toEqual([])
  })

  it("a put or a remove as the first use moves the old rows first, so neither is undone", async () => {
    const data = freshDir()
    const legacy = connectionsFile(data)
    const users = join(data, "users")
    await withLegacy(legacy, (s) =>
      Effect.all([s.put(ALICE, "github", "old-github", 10), s.put(ALICE, "notes", "old-notes", 11)])
    )
    await withUserStore(users, legacy, (s) =>
      Effect.all([s.remove(ALICE, "github"), s.put(ALICE, "notes", "new-notes", 40)], {
        concurrency: "unbounded"
      })
    )
    expect(await withUserStore(users, legacy, (s) => s.list(ALICE))).toEqual([
      { server: "notes", sealed: "new-notes", updatedAtMs: 40 }
    ])
  })

  it("no connections.sqlite: none is created", async () => {
    const data = freshDir()
    const legacy = connectionsFile(data)
    await withUserStore(join(data, "users"), legacy, (s) => s.put(ALICE, "notes", "sealed", 1))
    expect(existsSync(legacy)).toBe(false)
  })

  it("a DID that has no UTF-8 form is refused invalid, and nothing is written", async () => {
    const directory = freshDir()
    const exit = await withUserStore(directory, undefined, (s) =>
      Effect.exit(s.put("did:key:\uD800", "notes", "x", 1))
    )
    expect(exit._tag === "Failure" && exit.cause._tag === "Fail" && exit.cause.error.reason).toBe("invalid")
  })
})
