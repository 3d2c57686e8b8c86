/**
 * A download costs no more than its pointer announces: the store stops reading media longer than
 * the pointer's `compressedSize` (memory store, and the Matrix store against Synapse when one is
 * up), and a restore refuses such media, or a gzip that expands past the announced size, as
 * corrupt, while a normal snapshot still restores.
 */
import { randomBytes, randomUUID } from "node:crypto"
import { existsSync } from "node:fs"
import { gzipSync } from "node:zlib"
import { afterEach, describe, expect, it } from "vitest"
import {
  MatrixSyncEngine,
  MatrixSyncEngineError,
  matrixSnapshotStore,
  memorySnapshotStore,
  registerWithSharedSecret,
  type SnapshotStore,
  sha256Hex,
  userDatabaseDirectory
} from "../src/index.js"
import {
  readRows,
  recordingLogger,
  SKIP_REASON,
  synapseEnv,
  tempDir,
  uniqueName,
  writeRows
} from "./helpers.js"

const did = "did:key:z6MkDownloadLimit"
const cleanups: Array<() => void> = []
afterEach(() => {
  for (const c of cleanups.splice(0)) c()
})

const host = (store: SnapshotStore) => {
  const dir = tempDir("matrix-limit")
  const databases = userDatabaseDirectory(dir.path)
  const engine = new MatrixSyncEngine({
    store,
    databases,
    logger: recordingLogger(),
    intervalMs: 0,
    retry: { baseMs: 20, maxMs: 100, maxAttempts: 1 }
  })
  cleanups.push(() => engine.close(), dir.cleanup)
  return { engine, databases, path: databases.databasePath(did) }
}

const refusalOf = async (p: Promise<unknown>): Promise<MatrixSyncEngineError> => {
  try {
    await p
  } catch (e) {
    expect(e).toBeInstanceOf(MatrixSyncEngineError)
    return e as MatrixSyncEngineError
  }
  throw new Error("expected the download to be refused")
}

describe("download limit (memory store)", () => {
  it("refuses media longer than maxBytes; returns media of at most maxBytes", async () => {
    const store = memorySnapshotStore()
    const bytes = randomBytes(10_000)
    const mxc = await store.upload(bytes, "snapshot.gz")
    const e = await refusalOf(store.download(mxc, { maxBytes: 9_999 }))
    expect(e.reason).toBe("corrupt")
    expect(e.message).toBe(`snapshot media ${mxc} is longer than the announced 9999 B`)
    expect(Buffer.from(await store.download(mxc, { maxBytes: 10_000 }))).toEqual(bytes)
    expect(Buffer.from(await store.download(mxc))).toEqual(bytes)
  })

  /** Host A syncs a database; returns the store with A's pointer and media. */
  const synced = async () => {
    const store = memorySnapshotStore()
    const a = host(store)
    writeRows(a.path, ["hello", "world"])
    expect((await a.engine.syncNow(did))._tag).toBe("Uploaded")
    const [entry] = [...store.pointers.entries()]
    if (entry === undefined) throw new Error("no pointer")
    return { store, key: entry[0], pointer: entry[1] }
  }

  it("a normal snapshot still restores on a fresh host", async () => {
    const { store } = await synced()
    const b = host(store)
    expect((await b.engine.restore(did))._tag).toBe("Restored")
    expect(readRows(b.path)).toEqual(["hello", "world"])
  })

  it("restore refuses media longer than the pointer's compressedSize, by the store's limit", async () => {
    const { store, pointer } = await synced()
    // The media gains a tail the pointer does not announce.
    const media = store.media.get(pointer.mxc) ?? new Uint8Array()
    store.media.set(pointer.mxc, Buffer.concat([media, Buffer.alloc(1024 * 1024)]))
    const b = host(store)
    const out = await b.engine.restore(did)
    expect(out._tag).toBe("Rejected")
    if (out._tag !== "Rejected") return
    expect(out.error.reason).toBe("corrupt")
    expect(out.message).toContain(
      `snapshot media ${pointer.mxc} is longer than the announced ${pointer.compressedSize} B`
    )
    expect(existsSync(b.path)).toBe(false)
  })

  it("restore refuses a gzip bomb announced as a small database without expanding it", async () => {
    const { store, key, pointer } = await synced()
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024))
    const mxc = await store.upload(bomb, "bomb.gz")
    store.pointers.set(key, { ...pointer, mxc, size: 8192, compressedSize: bomb.length })
    const b = host(store)
    const out = await b.engine.restore(did)
    expect(out._tag).toBe("Rejected")
    if (out._tag !== "Rejected") return
    expect(out.error.reason).toBe("corrupt")
    expect(out.message).toContain(
      "size mismatch: expected 8192 B, decompresses to more (stopped after 8192 B)"
    )
    expect(existsSync(b.path)).toBe(false)
  })
})

const env = synapseEnv()

describe.skipIf(env === undefined)(`download limit against Synapse${env ? "" : ` — ${SKIP_REASON}`}`, () => {
  it("stops reading a body longer than maxBytes; reads one of at most maxBytes whole", async () => {
    const oracle = await registerWithSharedSecret({
      baseUrl: env?.url ?? "",
      sharedSecret: env?.secret ?? "",
      username: uniqueName("limit"),
      password: randomUUID()
    })
    const store = matrixSnapshotStore(oracle, { requestTimeoutMs: 10_000 })
    const bytes = randomBytes(4 * 1024 * 1024)
    const mxc = await store.upload(bytes, "snapshot.gz")
    const e = await refusalOf(store.download(mxc, { maxBytes: 256 * 1024 }))
    expect(e.reason).toBe("corrupt")
    const read = /is longer than the announced 262144 B \(stopped reading at (\d+) B\)$/.exec(e.message)
    expect(read, e.message).not.toBeNull()
    // It stopped within a chunk or so of the limit, far from the 4 MiB body.
    expect(Number(read?.[1])).toBeLessThan(1024 * 1024)
    // (Compared by hash: a deep equality of 4 MiB element by element takes tens of seconds.)
    expect(sha256Hex(await store.download(mxc, { maxBytes: bytes.length }))).toBe(sha256Hex(bytes))
    expect(sha256Hex(await store.download(mxc))).toBe(sha256Hex(bytes))
  })
})
