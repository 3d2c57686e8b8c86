/**
 * A bad user database (garbage, truncated, another file format, unreadable): opening it
 * reports a typed error the caller can log, the bad file is moved aside — byte for byte, never
 * overwritten or deleted — and the turn proceeds on a fresh, empty database.
 */
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  truncateSync,
  writeFileSync
} from "node:fs"
import { join } from "node:path"
import type { RunnableConfig } from "@langchain/core/runnables"
import { afterEach, describe, expect, it } from "vitest"
import {
  Database,
  makeSqliteSaver,
  SqliteOpenError,
  SqliteStorageError,
  UserDatabaseRegistry
} from "../src/index.js"
import { conversationCheckpoint, tempDir } from "./helpers.js"

let cleanups: Array<() => void> = []
afterEach(() => {
  for (const c of cleanups) c()
  cleanups = []
})

const setup = () => {
  const t = tempDir()
  const errors: Array<SqliteOpenError> = []
  const registry = new UserDatabaseRegistry({ directory: t.dir, onOpenError: (e) => errors.push(e) })
  cleanups.push(() => {
    void registry.close()
    t.cleanup()
  })
  return { registry, errors, dir: t.dir }
}

/** A real database with a few hundred KB of conversation, closed cleanly; answers its newest checkpoint id. */
const writeRealDatabase = async (filename: string): Promise<string> => {
  const saver = makeSqliteSaver({ filename })
  let config: RunnableConfig = { configurable: { thread_id: "t", checkpoint_ns: "" } }
  for (let step = 1; step <= 40; step++) {
    config = await saver.put(
      config,
      conversationCheckpoint(step),
      { source: "loop", step, parents: {} },
      {
        messages: step + 1,
        step: step + 1,
        ...(step === 1 ? { loadedPlugins: 1 } : {})
      }
    )
  }
  saver.close()
  return config.configurable!.checkpoint_id as string
}

const cases: Array<[string, (path: string) => Promise<void> | void, SqliteOpenError["reason"]]> = [
  ["garbage bytes", (p) => writeFileSync(p, Buffer.alloc(64 * 1024, 0x5a)), "not-a-database"],
  [
    "a file that is not SQLite (a PNG header and JSON)",
    (p) => writeFileSync(p, '\x89PNG\r\n\x1a\n{"not":"sqlite"}'),
    "not-a-database"
  ],
  [
    "a truncated database",
    async (p) => {
      await writeRealDatabase(p)
      truncateSync(p, 3 * 4096 + 100)
    },
    "corrupt"
  ],
  [
    "a database with its pages overwritten",
    async (p) => {
      await writeRealDatabase(p)
      const bytes = readFileSync(p)
      bytes.fill(0xff, 2 * 4096, 6 * 4096)
      writeFileSync(p, bytes)
    },
    "corrupt"
  ]
]

describe("corrupt or unreadable user database", () => {
  for (const [name, spoil, reason] of cases) {
    it(`${name}: typed error, moved aside intact, the turn proceeds on empty state`, async () => {
      const { registry, errors, dir } = setup()
      const did = "did:key:victim"
      const path = registry.databasePath(did)
      await spoil(path)
      const original = readFileSync(path)

      const saver = registry.checkpointerForUser(did)
      // The load the turn does first: no error reaches it, the state is simply empty.
      expect(await saver.getTuple({ configurable: { thread_id: "t" } })).toBeUndefined()

      expect(errors).toHaveLength(1)
      const error = errors[0]!
      expect(error).toBeInstanceOf(SqliteOpenError)
      expect(error._tag).toBe("SqliteOpenError")
      expect(error.reason).toBe(reason)
      expect(error.path).toBe(path)
      expect(error.movedTo).toMatch(/\.corrupt-\d{4}-\d\d-\d\dT[\d-]+Z$/)
      expect(readFileSync(error.movedTo!).equals(original)).toBe(true)

      // The turn goes on: it writes to a fresh database at the original path.
      const fresh = conversationCheckpoint(1)
      await saver.put(
        { configurable: { thread_id: "t" } },
        fresh,
        { source: "loop", step: 1, parents: {} },
        { messages: 2 }
      )
      expect((await saver.getTuple({ configurable: { thread_id: "t" } }))?.checkpoint.id).toBe(fresh.id)
      expect(
        readdirSync(dir).filter((f) => f.includes(".corrupt-") && !/-(wal|shm|journal)$/.test(f))
      ).toHaveLength(1)
    })
  }

  it("a second bad file gets its own name; the first one moved aside is untouched", async () => {
    const { registry, errors } = setup()
    const did = "did:key:twice"
    const path = registry.databasePath(did)
    writeFileSync(path, "first bad file".repeat(100))
    await registry.open(did)
    await registry.close()
    writeFileSync(path, "second bad file".repeat(100))
    const again = new UserDatabaseRegistry({
      directory: registry.directory,
      onOpenError: (e) => errors.push(e)
    })
    const report = await again.open(did)
    await again.close()
    expect(report.recovered?.reason).toBe("not-a-database")
    expect(errors).toHaveLength(2)
    expect(errors[0]!.movedTo).not.toBe(errors[1]!.movedTo)
    expect(readFileSync(errors[0]!.movedTo!, "utf8")).toBe("first bad file".repeat(100))
    expect(readFileSync(errors[1]!.movedTo!, "utf8")).toBe("second bad file".repeat(100))
  })

  it("a stale WAL of the bad file is moved aside with it, never replayed into the fresh one", async () => {
    const { registry, errors } = setup()
    const did = "did:key:wal"
    const path = registry.databasePath(did)
    writeFileSync(path, Buffer.alloc(8192, 1))
    writeFileSync(`${path}-wal`, Buffer.alloc(4096, 2))
    const report = await registry.open(did)
    expect(report.recovered?.movedTo).toBeDefined()
    expect(existsSync(`${report.recovered!.movedTo!}-wal`)).toBe(true)
    expect(errors).toHaveLength(1)
    expect(await registry.use(did, "read", (db) => db.integrityCheck())).toEqual(["ok"])
  })

  it("an unreadable file (a directory where the database should be) is moved aside too", async () => {
    const { registry, errors } = setup()
    const did = "did:key:dir"
    mkdirSync(registry.databasePath(did))
    writeFileSync(join(registry.databasePath(did), "keep.txt"), "mine")
    expect(await registry.use(did, "read", (db) => db.integrityCheck())).toEqual(["ok"])
    expect(errors[0]?.reason).toBe("unreadable")
    expect(readFileSync(join(errors[0]!.movedTo!, "keep.txt"), "utf8")).toBe("mine")
  })

  it("a file of another user is refused (owner-mismatch) and moved aside, not mixed in", async () => {
    const { registry, errors } = setup()
    await registry.use("did:key:a", "write", (db) =>
      db.statement("INSERT INTO plugboard_meta VALUES ('x','a')").run()
    )
    await registry.close()
    const { renameSync } = await import("node:fs")
    renameSync(registry.databasePath("did:key:a"), registry.databasePath("did:key:b"))
    const again = new UserDatabaseRegistry({
      directory: registry.directory,
      onOpenError: (e) => errors.push(e)
    })
    cleanups.push(() => void again.close())
    expect(
      await again.use("did:key:b", "read", (db) =>
        db.statement("SELECT * FROM plugboard_meta WHERE key='x'").get()
      )
    ).toBeUndefined()
    expect(errors.map((e) => e.reason)).toEqual(["owner-mismatch"])
  })

  it("damage found mid-operation (verify on open disabled): typed error, moved aside, next turn fresh", async () => {
    const t = tempDir()
    const errors: Array<SqliteOpenError> = []
    const registry = new UserDatabaseRegistry({
      directory: t.dir,
      connection: { verify: "none" },
      onOpenError: (e) => errors.push(e)
    })
    cleanups.push(() => {
      void registry.close()
      t.cleanup()
    })
    const did = "did:key:midway"
    const path = registry.databasePath(did)
    await writeRealDatabase(path)
    // Opened (and owner-checked) while sound; the damage happens under the open connection.
    expect((await registry.open(did)).recovered).toBeUndefined()
    // Fold the owner record the open wrote into the main file, so the WAL is empty.
    await registry.use(did, "write", () => undefined)
    await registry.use(did, "read", (db) => db.db.pragma("wal_checkpoint(TRUNCATE)"))
    const bytes = readFileSync(path)
    bytes.fill(0xff, 2 * 4096, bytes.length - 4096)
    writeFileSync(path, bytes)
    const saver = registry.checkpointerForUser(did)
    const failure = await saver.getTuple({ configurable: { thread_id: "t" } }).then(
      () => undefined,
      (e: unknown) => e
    )
    expect(failure).toBeInstanceOf(SqliteStorageError)
    expect((failure as SqliteStorageError).reason).toBe("corrupt")
    expect(errors.map((e) => e.reason)).toEqual(["corrupt"])
    expect(readFileSync(errors[0]!.movedTo!).equals(bytes)).toBe(true)
    // The host logged the failed load and ran the turn on empty state; the next one is clean.
    expect(await saver.getTuple({ configurable: { thread_id: "t" } })).toBeUndefined()
    expect(await registry.use(did, "read", (db) => db.integrityCheck())).toEqual(["ok"])
  })

  it("opening directly (no registry) throws the typed error and leaves the file alone", () => {
    const t = tempDir()
    cleanups.push(t.cleanup)
    const path = join(t.dir, "x.sqlite")
    writeFileSync(path, "definitely not a database, just text that is long enough to matter".repeat(10))
    const before = readFileSync(path)
    expect(() => Database.open({ filename: path })).toThrow(SqliteOpenError)
    try {
      makeSqliteSaver({ filename: path })
    } catch (e) {
      expect((e as SqliteOpenError).reason).toBe("not-a-database")
    }
    expect(readFileSync(path).equals(before)).toBe(true)
  })

  it.skipIf(process.getuid?.() === 0)("a file without read permission is reported Unreadable", async () => {
    const { registry, errors } = setup()
    const path = registry.databasePath("did:key:perm")
    await writeRealDatabase(path)
    chmodSync(path, 0o000)
    expect(await registry.use("did:key:perm", "read", (db) => db.integrityCheck())).toEqual(["ok"])
    expect(errors[0]?.reason).toBe("unreadable")
    chmodSync(errors[0]!.movedTo!, 0o600)
  })
})

/**
 * A sound database that cannot be opened just now — another process holds its lock, the process
 * ran out of file descriptors — is left exactly where it is: the operation fails `unavailable`
 * after retrying, and the next one, once the cause has passed, reads the whole history.
 */
describe("a sound database that cannot be opened for a passing reason", () => {
  const history = async (registry: UserDatabaseRegistry, did: string) =>
    (await registry.checkpointerForUser(did).getTuple({ configurable: { thread_id: "t" } }))?.checkpoint.id

  it("locked by another process: retried, reported Unavailable, never moved aside; served once the lock goes", async () => {
    const t = tempDir()
    cleanups.push(t.cleanup)
    const did = "did:key:locked"
    const first = new UserDatabaseRegistry({ directory: t.dir })
    const path = first.databasePath(did)
    await first.close()
    const latest = await writeRealDatabase(path)

    // Another process (an operator's shell, a backup tool) keeps the database locked.
    const BetterSqlite3 = (await import("better-sqlite3")).default
    const other = new BetterSqlite3(path)
    other.pragma("locking_mode = EXCLUSIVE")
    other.exec("BEGIN EXCLUSIVE")

    const errors: Array<SqliteOpenError> = []
    const registry = new UserDatabaseRegistry({
      directory: t.dir,
      openRetryMs: 300,
      connection: { busyTimeoutMs: 20 },
      onOpenError: (e) => errors.push(e)
    })
    cleanups.push(() => void registry.close())
    const failure = await history(registry, did).then(
      () => undefined,
      (e: unknown) => e
    )
    expect(failure).toBeInstanceOf(SqliteOpenError)
    expect((failure as SqliteOpenError).reason).toBe("unavailable")
    expect((failure as SqliteOpenError).message).toMatch(/SQLITE_BUSY/)
    // Reported once, after the retries, and nothing was moved or started afresh.
    expect(errors.map((e) => [e.reason, e.movedTo])).toEqual([["unavailable", undefined]])
    expect(readdirSync(t.dir).filter((f) => f.includes(".corrupt-"))).toEqual([])

    other.exec("COMMIT")
    other.close()
    expect(await history(registry, did)).toBe(latest)
    expect(errors).toHaveLength(1)
  })

  it("out of file descriptors (EMFILE, in a child process under a low ulimit): left in place, served afterwards", async () => {
    const t = tempDir()
    cleanups.push(t.cleanup)
    const did = "did:key:emfile"
    const first = new UserDatabaseRegistry({ directory: t.dir })
    const path = first.databasePath(did)
    await first.close()
    const latest = await writeRealDatabase(path)
    const { execFileSync } = await import("node:child_process")
    const child = join(import.meta.dirname, "emfile-child.ts")
    const root = join(import.meta.dirname, "../../../..")
    const out = execFileSync(
      "bash",
      [
        "-c",
        `ulimit -n 256 && exec "${process.execPath}" --conditions=@plugboard/source --import tsx "$@"`,
        "bash",
        child,
        t.dir,
        did
      ],
      { cwd: root, encoding: "utf8", timeout: 60_000 }
    )
    const result = JSON.parse(out.trim().split("\n").at(-1)!) as {
      whileExhausted: { reason: string; message: string }
      reported: Array<[string, string | null]>
      afterwards: string | null
      files: Array<string>
    }
    expect(result.whileExhausted.reason).toBe("unavailable")
    expect(result.reported).toEqual([["unavailable", null]])
    expect(result.afterwards).toBe(latest)
    expect(result.files.filter((f) => f.includes(".corrupt-"))).toEqual([])
  })
})
