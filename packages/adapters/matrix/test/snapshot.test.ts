/**
 * Snapshots: consistent, deterministic for unchanged content, and refused on every kind of
 * damage (not gzip, truncated, wrong hash or size, not SQLite, failing integrity_check, a gzip
 * that expands past its announced size) without leaving files behind.
 */
import { readdirSync } from "node:fs"
import { join } from "node:path"
import { gzipSync } from "node:zlib"
import Database from "better-sqlite3"
import { afterEach, describe, expect, it } from "vitest"
import {
  type MatrixSyncEngineError,
  type QuiescentDatabase,
  sha256Hex,
  takeSnapshot,
  verifySnapshot
} from "../src/index.js"
import { readRows, tempDir, writeRows } from "./helpers.js"

const cleanups: Array<() => void> = []
afterEach(() => {
  for (const c of cleanups.splice(0)) c()
})

/** The write lock of a single file, without a store around it. */
const lockOf =
  (path: string) =>
  <A>(fn: (db: QuiescentDatabase) => Promise<A>): Promise<A> =>
    fn({
      path,
      backup: async (destination) => {
        const db = new Database(path, { fileMustExist: true })
        try {
          await db.backup(destination)
        } finally {
          db.close()
        }
      },
      closeConnection: () => {}
    })

const setup = async (rows: ReadonlyArray<string>) => {
  const dir = tempDir("matrix-snap")
  cleanups.push(dir.cleanup)
  const path = join(dir.path, "user.sqlite")
  writeRows(path, rows)
  const snapshot = await takeSnapshot({
    workDirectory: dir.path,
    withLock: lockOf(path),
    now: Date.now
  })
  return { dir: dir.path, path, snapshot }
}

const refusal = async (
  compressed: Uint8Array,
  expectedSha256: string,
  expectedSize: number,
  directory: string
): Promise<MatrixSyncEngineError> => {
  try {
    await verifySnapshot({ compressed, expectedSha256, expectedSize, directory, maxBytes: 1 << 30 })
  } catch (e) {
    // Nothing is left behind by a refused snapshot.
    expect(readdirSync(directory).filter((f) => f.includes(".restore-"))).toEqual([])
    return e as MatrixSyncEngineError
  }
  throw new Error("expected the snapshot to be refused")
}

describe("Snapshot", () => {
  it("round-trips and hashes the same content to the same sha256", async () => {
    const { dir, path, snapshot } = await setup(["a", "b"])
    const again = await takeSnapshot({
      workDirectory: dir,
      withLock: lockOf(path),
      now: Date.now
    })
    expect(again.sha256).toBe(snapshot.sha256)
    const tmp = await verifySnapshot({
      compressed: snapshot.compressed,
      expectedSha256: snapshot.sha256,
      expectedSize: snapshot.size,
      directory: dir,
      maxBytes: 1 << 30
    })
    expect(readRows(tmp)).toEqual(["a", "b"])
    expect(readdirSync(dir).filter((f) => f.startsWith(".snapshot-"))).toEqual([])
  })

  it("includes committed WAL content (online backup, not a raw file copy)", async () => {
    const dir = tempDir("matrix-wal")
    cleanups.push(dir.cleanup)
    const path = join(dir.path, "user.sqlite")
    const writer = new Database(path)
    writer.pragma("journal_mode = WAL")
    writer.pragma("wal_autocheckpoint = 0") // keep the rows in the -wal file only
    writer.exec("CREATE TABLE rows (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
    writer.prepare("INSERT INTO rows (value) VALUES (?)").run("only in the wal")
    const snapshot = await takeSnapshot({
      workDirectory: dir.path,
      withLock: lockOf(path),
      now: Date.now
    })
    writer.close()
    const tmp = await verifySnapshot({
      compressed: snapshot.compressed,
      expectedSha256: snapshot.sha256,
      expectedSize: snapshot.size,
      directory: dir.path,
      maxBytes: 1 << 30
    })
    expect(readRows(tmp)).toEqual(["only in the wal"])
  })

  it("refuses bytes that are not gzip", async () => {
    const { dir, snapshot } = await setup(["a"])
    const e = await refusal(new TextEncoder().encode("garbage"), snapshot.sha256, snapshot.size, dir)
    expect(e.reason).toBe("corrupt")
    expect(e.message).toContain("cannot decompress")
  })

  it("refuses a truncated gzip", async () => {
    const { dir, snapshot } = await setup(["a", "b", "c"])
    const cut = snapshot.compressed.subarray(0, Math.floor(snapshot.compressed.length / 2))
    expect((await refusal(cut, snapshot.sha256, snapshot.size, dir)).message).toContain("cannot decompress")
  })

  it("refuses a size or sha256 mismatch", async () => {
    const { dir, snapshot } = await setup(["a"])
    expect((await refusal(snapshot.compressed, snapshot.sha256, snapshot.size + 1, dir)).message).toContain(
      "size mismatch"
    )
    expect((await refusal(snapshot.compressed, "0".repeat(64), snapshot.size, dir)).message).toContain(
      "sha256 mismatch"
    )
  })

  it("stops decompressing a gzip bomb at the announced size instead of expanding it", async () => {
    const { dir } = await setup(["a"])
    // 64 MiB of zeros in ~64 KiB of gzip, announced as an 8 KiB database. Decompressed in full it
    // would be refused too (size mismatch), after costing its whole size in memory.
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024))
    const e = await refusal(bomb, "a".repeat(64), 8192, dir)
    expect(e.reason).toBe("corrupt")
    expect(e.message).toBe("size mismatch: expected 8192 B, decompresses to more (stopped after 8192 B)")
  })

  it("stops decompressing a real snapshot followed by more gzip at its announced size", async () => {
    const { dir, snapshot } = await setup(["a", "b"])
    // A valid snapshot with a second gzip member appended: gunzip reads both members.
    const padded = Buffer.concat([snapshot.compressed, gzipSync(Buffer.alloc(16 * 1024 * 1024))])
    const e = await refusal(padded, snapshot.sha256, snapshot.size, dir)
    expect(e.message).toBe(
      `size mismatch: expected ${snapshot.size} B, decompresses to more (stopped after ${snapshot.size} B)`
    )
  })

  it("accepts a snapshot whose size is exactly the limit", async () => {
    const { dir, snapshot } = await setup(["a", "b"])
    const tmp = await verifySnapshot({
      compressed: snapshot.compressed,
      expectedSha256: snapshot.sha256,
      expectedSize: snapshot.size,
      directory: dir,
      maxBytes: snapshot.size
    })
    expect(readRows(tmp)).toEqual(["a", "b"])
  })

  it("refuses something that is not a SQLite database, even with a matching hash", async () => {
    const { dir } = await setup(["a"])
    const raw = Buffer.alloc(4096, 7)
    const e = await refusal(gzipSync(raw), sha256Hex(raw), raw.length, dir)
    expect(e.message).toContain("not a SQLite 3 database")
  })

  it("refuses a database that fails PRAGMA integrity_check, even with a matching hash", async () => {
    const dir = tempDir("matrix-corrupt")
    cleanups.push(dir.cleanup)
    const path = join(dir.path, "user.sqlite")
    writeRows(
      path,
      Array.from({ length: 400 }, (_, i) => `row ${i} ${"x".repeat(100)}`)
    )
    const good = await takeSnapshot({
      workDirectory: dir.path,
      withLock: lockOf(path),
      now: Date.now
    })
    const { gunzipSync } = await import("node:zlib")
    const raw = Buffer.from(gunzipSync(good.compressed))
    const pageSize = raw.readUInt16BE(16)
    // Scribble over the middle of the third page (a b-tree page of the rows table).
    raw.fill(0xff, pageSize * 2 + 8, pageSize * 2 + 200)
    const e = await refusal(gzipSync(raw), sha256Hex(raw), raw.length, dir.path)
    expect(e.reason).toBe("corrupt")
    // Whether the check lists the damage or fails on it (SQLITE_CORRUPT), it is the check's verdict.
    expect(e.message).toMatch(/PRAGMA integrity_check failed: /)
  })

  it("refuses a database cut short, by the length its own header announces", async () => {
    const dir = tempDir("matrix-cut")
    cleanups.push(dir.cleanup)
    const path = join(dir.path, "user.sqlite")
    writeRows(
      path,
      Array.from({ length: 400 }, (_, i) => `row ${i} ${"x".repeat(100)}`)
    )
    const good = await takeSnapshot({ workDirectory: dir.path, withLock: lockOf(path), now: Date.now })
    const { gunzipSync } = await import("node:zlib")
    const raw = Buffer.from(gunzipSync(good.compressed))
    const pageSize = raw.readUInt16BE(16)
    const cut = raw.subarray(0, pageSize * Math.floor(raw.length / pageSize / 2))
    const e = await refusal(gzipSync(cut), sha256Hex(cut), cut.length, dir.path)
    expect(e.reason).toBe("corrupt")
    expect(e.message).toContain(
      `truncated: the SQLite header announces ${raw.length} B, the file has ${cut.length} B`
    )
  })
})
