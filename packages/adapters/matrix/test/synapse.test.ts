/**
 * Matrix sync against a real Synapse (scripts/synapse/synapse.sh, brought up by
 * scripts/ci-services.sh). Skipped, with the reason in the suite name, when no homeserver is
 * configured. Turns are real LangGraph runs over the plugboard state annotation, checkpointed by
 * the plugboard SqliteSaver into per-user files.
 */
import { randomUUID } from "node:crypto"
import { existsSync, readdirSync } from "node:fs"
import { dirname } from "node:path"
import { gunzipSync, gzipSync } from "node:zlib"
import { AIMessage, type BaseMessage, HumanMessage } from "@langchain/core/messages"
import { type BaseCheckpointSaver, END, START, StateGraph } from "@langchain/langgraph"
import { AgentState } from "@plugboard/langgraph"
import { storageKey, UserDatabaseRegistry } from "@plugboard/sqlite"
import { MatrixSyncConformance } from "@plugboard/testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  type MatrixAccount,
  MatrixSyncEngine,
  type MatrixSyncEngineOptions,
  matrixSnapshotStore,
  registerWithSharedSecret,
  SNAPSHOT_EVENT_TYPE,
  type SnapshotPointer,
  type SnapshotStore,
  sha256Hex
} from "../src/index.js"
import { world } from "./conformanceWorld.js"
import { controlSynapse, recordingLogger, SKIP_REASON, synapseEnv, tempDir, uniqueName } from "./helpers.js"

const env = synapseEnv()
if (env === undefined) console.warn(`[matrix] Synapse suite ${SKIP_REASON}`)

/** One turn: the "agent" echoes the user and loads the plugin named by `load <name>`. */
const turnGraph = (saver: BaseCheckpointSaver) =>
  new StateGraph(AgentState)
    .addNode("agent", (state) => {
      const text = String(state.messages.at(-1)?.content ?? "")
      const load = /load (\S+)/.exec(text)?.[1]
      return {
        messages: [new AIMessage({ content: `echo: ${text}`, id: randomUUID() })],
        ...(load === undefined ? {} : { loadedPlugins: [load] })
      }
    })
    .addEdge(START, "agent")
    .addEdge("agent", END)
    .compile({ checkpointer: saver })

/** The page size recorded in a SQLite header. */
const pageSizeOf = (raw: Buffer): number => {
  const n = raw.readUInt16BE(16)
  return n === 1 ? 65_536 : n
}

/** A copy of `bytes` with `count` bytes from `at` inverted. */
const flipBytes = (bytes: Uint8Array, at: number, count: number): Uint8Array => {
  const out = Uint8Array.from(bytes)
  for (let i = at; i < Math.min(out.length, at + count); i++) out[i] = (out[i] ?? 0) ^ 0xff
  return out
}

/**
 * A copy of a SQLite file whose last table leaf page (after page 1, so the schema still opens)
 * has its cell pointers aimed past the page: the file opens, `PRAGMA integrity_check` reports it.
 */
const scribbleOverLeafCells = (raw: Buffer): Buffer => {
  const out = Buffer.from(raw)
  const size = pageSizeOf(raw)
  for (let page = raw.length / size - 1; page >= 1; page--) {
    const base = page * size
    const cells = out.readUInt16BE(base + 3)
    if (out[base] === 0x0d && cells > 0) {
      out.fill(0xff, base + 8, base + 8 + 2 * cells)
      return out
    }
  }
  throw new Error("no table leaf page after page 1 to damage")
}

const texts = (messages: ReadonlyArray<BaseMessage>) =>
  messages.map((m) => `${m.getType()}:${String(m.content)}`)

describe.skipIf(env === undefined)(`Matrix sync against Synapse${env ? "" : ` — ${SKIP_REASON}`}`, () => {
  const cleanups: Array<() => void> = []
  let oracle: MatrixAccount

  beforeAll(async () => {
    oracle = await registerWithSharedSecret({
      baseUrl: env?.url ?? "",
      sharedSecret: env?.secret ?? "",
      username: uniqueName("oracle"),
      password: randomUUID()
    })
  })
  afterAll(() => {
    for (const c of cleanups.splice(0)) c()
  })

  /**
   * A host: its own data directory (the plugboard per-user registry), Matrix client and sync
   * engine; `turn` runs one turn the way a host does (inside the registry's turn gate, then a
   * scheduled sync).
   */
  const makeHost = (
    did: string,
    extra: Partial<MatrixSyncEngineOptions> = {},
    setup: {
      /** An existing data directory (a restarted host); default a fresh one. */
      readonly directory?: string
      readonly wrapStore?: (store: SnapshotStore) => SnapshotStore
    } = {}
  ) => {
    const dir =
      setup.directory === undefined ? tempDir("matrix-host") : { path: setup.directory, cleanup: () => {} }
    const databases = new UserDatabaseRegistry({ directory: dir.path, retention: false })
    const real = matrixSnapshotStore(oracle, { requestTimeoutMs: 5_000 })
    const store = setup.wrapStore?.(real) ?? real
    const logger = recordingLogger()
    const engine = new MatrixSyncEngine({
      store,
      databases,
      logger,
      debounceMs: 50,
      intervalMs: 0,
      retry: { baseMs: 250, maxMs: 1_000, maxAttempts: 200 },
      ...extra
    })
    const graph = turnGraph(databases.checkpointerForUser(did))
    const thread = { configurable: { thread_id: "thread-1" } }
    const host = {
      engine,
      store,
      logger,
      directory: dir.path,
      client: real.client,
      path: databases.databasePath(did),
      turn: async (text: string) => {
        const result = await databases.withTurn(did, () =>
          graph.invoke({ messages: [new HumanMessage({ content: text, id: randomUUID() })] }, thread)
        )
        engine.scheduleSync(did)
        return result
      },
      state: async () => (await graph.getState(thread)).values as typeof AgentState.State,
      close: async () => {
        engine.close()
        await databases.close()
      }
    }
    cleanups.push(() => void host.close(), dir.cleanup)
    return host
  }

  it("host A's thread, messages and loadedPlugins are restored on host B, which continues the thread", async () => {
    const did = `did:key:z6Mk${uniqueName("user")}`
    const a = makeHost(did)
    await a.turn("hello, load weather")
    await a.turn("and load calendar please")
    await a.turn("what is loaded?")
    const report = await a.engine.flush(20_000)
    expect(report.synced.map((s) => s.outcome._tag)).toEqual(["Uploaded"])
    const stateA = await a.state()

    // The room holds our state event, keyed by the user's storage key, pointing at the media.
    const key = storageKey(did)
    const roomId = await a.store.room(key, { create: false })
    const content = await a.client.getStateEvent(roomId, SNAPSHOT_EVENT_TYPE, key)
    expect(content).toMatchObject({ encoding: "gzip", schemaVersion: 1 })
    expect(String(content.mxc)).toMatch(/^mxc:\/\/localhost\//)

    const b = makeHost(did)
    expect(existsSync(b.path)).toBe(false)
    expect((await b.engine.restore(did))._tag).toBe("Restored")
    expect(readdirSync(dirname(b.path)).filter((f) => f.includes(".restore-"))).toEqual([])
    const stateB = await b.state()
    expect(texts(stateB.messages)).toEqual(texts(stateA.messages))
    expect(texts(stateB.messages)).toHaveLength(6)
    expect(stateB.messages.map((m) => m.id)).toEqual(stateA.messages.map((m) => m.id))
    expect([...stateB.loadedPlugins]).toEqual(["weather", "calendar"])

    const next = await b.turn("still there? load maps")
    expect(texts(next.messages).slice(0, 6)).toEqual(texts(stateA.messages))
    expect(next.messages).toHaveLength(8)
    expect([...next.loadedPlugins]).toEqual(["weather", "calendar", "maps"])
    expect((await b.engine.flush(20_000)).synced.map((s) => s.outcome._tag)).toEqual(["Uploaded"])
  })

  it.skipIf(env?.control === undefined)(
    "homeserver stopped in the middle of a sync: turns succeed, the next sync completes, nothing is lost, no empty upload",
    async () => {
      const did = `did:key:z6Mk${uniqueName("user")}`
      const seed = makeHost(did)
      await seed.turn("before the outage, load weather")
      await seed.engine.flush(20_000)
      const good = await seed.store.readPointer(
        await seed.store.room(storageKey(did), { create: false }),
        storageKey(did)
      )

      let stopped = false
      const a = makeHost(did, {
        afterSnapshot: async () => {
          if (stopped || env === undefined) return
          stopped = true
          await controlSynapse(env, "stop") // the backup is done, the upload is next
        }
      })
      let c: ReturnType<typeof makeHost> | undefined
      // A restores (server up), then syncs a new turn; the server dies mid-sync.
      expect((await a.engine.restore(did))._tag).toBe("Restored")
      await a.turn("first turn on A, load calendar")
      try {
        await expect(a.engine.syncNow(did)).rejects.toMatchObject({ reason: "unavailable" })
        expect(stopped).toBe(true)
        // Turns keep working while the homeserver is down, and their syncs fail quietly.
        const during = await a.turn("turn during the outage")
        expect(during.messages).toHaveLength(6)
        // The failed sync is retried in the background: its line says so.
        for (
          let waited = 0;
          !a.logger.lines.some((l) => l.includes("retrying in")) && waited < 10_000;
          waited += 50
        ) {
          await new Promise((r) => setTimeout(r, 50))
        }
        expect(a.logger.lines.some((l) => l.includes("retrying in"))).toBe(true)

        // Host C has no local database and cannot restore: it must not upload its empty state.
        c = makeHost(did)
        expect((await c.engine.restore(did))._tag).toBe("Unavailable")
        await c.turn("a turn on C's empty state")
        expect(await c.engine.syncNow(did)).toMatchObject({ _tag: "Refused", reason: "restore-pending" })
      } finally {
        if (env !== undefined) await controlSynapse(env, "start")
      }
      // C's background retry brings the room's state in and keeps its empty-state turn aside.
      const restoredC = c
      if (restoredC === undefined) throw new Error("host C was not created")
      const until = Date.now() + 30_000
      while (restoredC.engine.restoreStatus(did) !== "resolved" && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 100))
      }
      expect(restoredC.engine.restoreStatus(did)).toBe("resolved")
      const stateC = texts((await restoredC.state()).messages)
      expect(stateC).toContain("human:before the outage, load weather")
      expect(stateC).not.toContain("human:a turn on C's empty state")
      expect(readdirSync(dirname(restoredC.path)).some((f) => f.includes(".conflict-"))).toBe(true)

      // After the restart the retried sync completes on its own.
      const deadline = Date.now() + 30_000
      while (!a.logger.lines.some((l) => l.startsWith("info synced")) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100))
      }
      expect(a.logger.lines.filter((l) => l.startsWith("info synced")).length).toBeGreaterThan(0)
      const key = storageKey(did)
      const roomId = await a.store.room(key, { create: false })
      const after = await a.store.readPointer(roomId, key)
      expect(after.previousSha256).toBe(good.sha256)

      const d = makeHost(did)
      expect((await d.engine.restore(did))._tag).toBe("Restored")
      const state = await d.state()
      expect(texts(state.messages)).toEqual(texts((await a.state()).messages))
      expect(texts(state.messages)).toContain("human:turn during the outage")
      expect([...state.loadedPlugins]).toEqual(["weather", "calendar"])
    },
    120_000
  )

  it("homeserver stopped between the media upload and the pointer write, and still down when the restarted host serves the user: default retries, nothing lost", async () => {
    const did = `did:key:z6Mk${uniqueName("user")}`
    const seed = makeHost(did)
    await seed.turn("before the outage, load weather")
    await seed.engine.flush(20_000)

    let armed = false
    const a = makeHost(
      did,
      {},
      {
        wrapStore: (real) => ({
          ...real,
          upload: async (bytes, name) => {
            const mxc = await real.upload(bytes, name)
            if (armed && env !== undefined) {
              armed = false
              await controlSynapse(env, "stop") // the media is up; the pointer write is next
            }
            return mxc
          }
        })
      }
    )
    expect((await a.engine.restore(did))._tag).toBe("Restored")
    await a.turn("a turn on A, load calendar")
    armed = true
    let restarted: ReturnType<typeof makeHost> | undefined
    try {
      await expect(a.engine.syncNow(did)).rejects.toMatchObject({ reason: "unavailable" })
      await a.close()
      // The process restarts on the same directory, with the engine's default retry budget; the
      // user's first request meets the outage, and their turn runs on the local state.
      restarted = makeHost(did, { retry: undefined }, { directory: a.directory })
      expect((await restarted.engine.restore(did))._tag).toBe("Unavailable")
      await restarted.turn("a turn during the outage")
    } finally {
      if (env !== undefined) await controlSynapse(env, "start")
    }
    if (restarted === undefined) throw new Error("the restarted host was not created")
    // Shutdown: the flush restores first (the room holds what this database descends from)
    // and uploads the two turns.
    const report = await restarted.engine.flush(30_000)
    expect(report.synced.map((s) => s.outcome._tag)).toEqual(["Uploaded"])

    const d = makeHost(did)
    expect((await d.engine.restore(did))._tag).toBe("Restored")
    expect(texts((await d.state()).messages)).toEqual(texts((await restarted.state()).messages))
    expect(texts((await d.state()).messages)).toEqual(
      expect.arrayContaining([
        "human:before the outage, load weather",
        "human:a turn on A, load calendar",
        "human:a turn during the outage"
      ])
    )
    expect([...(await d.state()).loadedPlugins]).toEqual(["weather", "calendar"])
  }, 120_000)

  it("a corrupted or truncated snapshot in the room is refused with a clear log line; what a host had is kept", async () => {
    const did = `did:key:z6Mk${uniqueName("user")}`
    const key = storageKey(did)
    const a = makeHost(did)
    await a.turn("precious history, load weather")
    await a.engine.flush(20_000)
    const b = makeHost(did)
    expect((await b.engine.restore(did))._tag).toBe("Restored")
    const before = texts((await b.state()).messages)
    // A newer snapshot B does not have: the damaged copies below are made from it, so that
    // B (whose ledger names the older one) downloads and checks each of them.
    await a.turn("a newer turn, load calendar")
    await a.engine.flush(20_000)

    const roomId = await a.store.room(key, { create: false })
    const good = await a.store.readPointer(roomId, key)
    const gz = await a.store.download(good.mxc)
    expect(gz.length).toBe(good.compressedSize)
    const raw = gunzipSync(gz)
    // Each damaged snapshot's pointer carries the true size and sha256 of what it points at
    // (where those exist), so that the refusal comes from the check the case is named for.
    const pointed = (bytes: Buffer) => ({ sha256: sha256Hex(bytes), size: bytes.length })
    const cases: ReadonlyArray<{
      label: string
      media: Uint8Array
      pointer: Partial<SnapshotPointer>
      reason: RegExp
    }> = [
      {
        // The media is cut short (a broken upload); the pointer announces the full gzip.
        label: "gzip truncated, pointer of the full snapshot",
        media: gz.subarray(0, Math.floor(gz.length / 2)),
        pointer: { compressedSize: gz.length },
        reason: /truncated: expected \d+ B of gzip, got \d+ B/
      },
      {
        label: "gzip truncated, pointer announcing the truncated size",
        media: gz.subarray(0, Math.floor(gz.length / 2)),
        pointer: { compressedSize: Math.floor(gz.length / 2) },
        reason: /cannot decompress \(unexpected end of file\)/
      },
      {
        label: "gzip corrupted",
        media: flipBytes(gz, Math.floor(gz.length / 3), 64),
        pointer: {},
        reason: /cannot decompress \(/
      },
      (() => {
        const cut = raw.subarray(
          0,
          pageSizeOf(raw) * Math.max(1, Math.floor(raw.length / pageSizeOf(raw) / 2))
        )
        return {
          label: "SQLite file truncated, pointer with its true sha256 and size",
          media: gzipSync(cut),
          pointer: pointed(cut),
          reason: /truncated: the SQLite header announces \d+ B, the file has \d+ B/
        }
      })(),
      (() => {
        const headless = Buffer.from(raw).fill(0, 0, 16)
        return {
          label: "SQLite header overwritten, pointer with its true sha256",
          media: gzipSync(headless),
          pointer: pointed(headless),
          reason: /not a SQLite 3 database \(bad header\)/
        }
      })(),
      (() => {
        const damaged = scribbleOverLeafCells(raw)
        return {
          label: "b-tree page damaged, pointer with its true sha256",
          media: gzipSync(damaged),
          pointer: pointed(damaged),
          reason: /PRAGMA integrity_check failed: /
        }
      })()
    ]
    for (const { label, media, pointer, reason } of cases) {
      const mxc = await a.store.upload(media, "damaged.sqlite.gz")
      await a.store.writePointer(roomId, key, { ...good, mxc, compressedSize: media.length, ...pointer })
      const refusedLine = (lines: ReadonlyArray<string>) =>
        lines.filter((l) => l.startsWith("error") && l.includes(" refused: ")).at(-1)

      expect((await b.engine.restore(did))._tag, label).toBe("Rejected")
      expect(refusedLine(b.logger.lines), label).toMatch(reason)
      expect(texts((await b.state()).messages), label).toEqual(before)

      const fresh = makeHost(did)
      const outcome = await fresh.engine.restore(did)
      expect(outcome._tag, label).toBe("Rejected")
      expect(outcome._tag === "Rejected" ? outcome.message : "", label).toMatch(reason)
      expect(existsSync(fresh.path), label).toBe(false)
      expect(readdirSync(dirname(fresh.path)), label).toEqual([])
      const line = refusedLine(fresh.logger.lines)
      expect(line, label).toMatch(
        new RegExp(
          `^error restore of did:key:\\S+ refused: snapshot ${mxc.replace(/[/.]/g, "\\$&")} \\(sha256 [0-9a-f]{12}\\) failed verification: .*${reason.source}`
        )
      )
      expect(line, label).toContain("keeping the local state as it is and not uploading")
      expect(fresh.engine.restoreStatus(did), label).toBe("failed")
      // A turn on that host then runs on empty state, and is not uploaded over the room's pointer.
      await fresh.turn("empty-state turn")
      expect(await fresh.engine.syncNow(did)).toMatchObject({ _tag: "Refused", reason: "restore-failed" })
      await fresh.close()
    }
    // Host B kept what it had, and nobody replaced the (damaged) pointer.
    expect(texts((await b.state()).messages)).toEqual(before)
    expect((await a.store.readPointer(roomId, key)).mxc).not.toBe(good.mxc)
    // Once the room points at a sound snapshot again, B takes it: the checks, not the path, refused.
    await a.store.writePointer(roomId, key, good)
    expect((await b.engine.restore(did))._tag).toBe("Restored")
    expect(texts((await b.state()).messages)).toEqual(texts((await a.state()).messages))
  })
})

// Core's MatrixSync conformance suite on the real homeserver, in this file so that it never runs
// while the outage test above has the homeserver stopped. One oracle account and alias prefix per
// case, so that every case starts with no rooms.
if (env !== undefined) {
  MatrixSyncConformance.run("Matrix sync engine, Synapse", async () =>
    world(
      matrixSnapshotStore(
        await registerWithSharedSecret({
          baseUrl: env.url,
          sharedSecret: env.secret,
          username: `conf-${randomUUID().slice(0, 8)}`,
          password: randomUUID()
        }),
        { requestTimeoutMs: 5_000, aliasPrefix: `conf-${randomUUID().slice(0, 8)}-` }
      )
    )
  )
}
