/**
 * Replication across hosts: a turn on host A, graceful close (which flushes the sync), then
 * host B — a fresh data directory sharing only the snapshot store — serves the same user's
 * session and history. The store is the adapters' in-memory twin of the Matrix one.
 * Restores cost one homeserver round trip per user (not per request), and a hanging homeserver
 * holds a request at most the configured bound.
 */
import { memorySnapshotStore, type SnapshotStore } from "@plugboard/matrix"
import { generateSigner } from "@plugboard/ucan"
import { describe, expect, it } from "vitest"
import { call, collect, headersFor, recordingLogger, start, stream } from "./helpers.js"

it("a user's state written on one host is served by another after a graceful close", async () => {
  const store = memorySnapshotStore()
  const signer = await generateSigner()
  const a = await start({ matrixStore: store })
  try {
    const headers = await headersFor(signer, a.app.oracleDid)
    const events = await collect(
      (await stream(a.url, "travels", headers, "What's the weather in Berlin?")).events
    )
    expect(events.at(-1)?._tag).toBe("done")
  } finally {
    await a.stop()
  }
  const b = await start({ matrixStore: store })
  try {
    const headers = await headersFor(signer, b.app.oracleDid)
    const sessions = await call(`${b.url}/sessions`, { headers })
    expect(sessions.body).toMatchObject({ total: 1, sessions: [{ sessionId: "travels" }] })
    const history = await call(`${b.url}/messages/travels`, { headers })
    expect(history.body.messages.map((m: { type: string }) => m.type)).toEqual([
      "human",
      "ai",
      "tool",
      "ai",
      "tool",
      "ai"
    ])
    // And the thread continues there: the weather plugin is already loaded in it.
    const next = await collect(
      (await stream(b.url, "travels", headers, "What's the weather in Tokyo?")).events
    )
    const calls = next
      .filter((e) => e._tag === "tool_call" && e.status === "isRunning")
      .map((e) => (e as { toolName: string }).toolName)
    expect(calls).toEqual(["get_current_weather"])
  } finally {
    await b.stop()
  }
})

/** The memory store, counting restores (the only caller of `room` without `create`). */
const countingStore = () => {
  const inner = memorySnapshotStore()
  const counts = { restores: 0 }
  const store: SnapshotStore = {
    ...inner,
    room: (key, options) => {
      if (!options.create) counts.restores += 1
      return inner.room(key, options)
    }
  }
  return { store, counts }
}

const turn = async (url: string, session: string, headers: Record<string, string>) => {
  const events = await collect((await stream(url, session, headers, "What's the weather in Berlin?")).events)
  expect(events.at(-1)?._tag).toBe("done")
  expect(events.some((e) => e._tag === "message")).toBe(true)
  expect(events.some((e) => e._tag === "error")).toBe(false)
}

describe("restore before serving a user", () => {
  it("asks the homeserver once per user while the database is on disk (MATRIX_RECHECK_AFTER_MS)", async () => {
    const { store, counts } = countingStore()
    const server = await start({ matrixStore: store })
    try {
      const signer = await generateSigner()
      const headers = await headersFor(signer, server.app.oracleDid)
      await turn(server.url, "once", headers)
      expect(counts.restores).toBe(1)
      await turn(server.url, "once", headers)
      expect((await call(`${server.url}/messages/once`, { headers })).status).toBe(200)
      expect((await call(`${server.url}/sessions`, { headers })).status).toBe(200)
      expect(counts.restores).toBe(1)
      // Another user has their own restore.
      await turn(server.url, "other", await headersFor(await generateSigner(), server.app.oracleDid))
      expect(counts.restores).toBe(2)
    } finally {
      await server.stop()
    }
    // With 0 the homeserver is asked before every request.
    const always = countingStore()
    const eager = await start({ matrixStore: always.store, env: { MATRIX_RECHECK_AFTER_MS: "0" } })
    try {
      const headers = await headersFor(await generateSigner(), eager.app.oracleDid)
      await turn(eager.url, "each", headers)
      await turn(eager.url, "each", headers)
      expect((await call(`${eager.url}/sessions`, { headers })).status).toBe(200)
      expect(always.counts.restores).toBe(3)
    } finally {
      await eager.stop()
    }
  })

  it("a homeserver that hangs holds a turn at most MATRIX_REQUEST_TIMEOUT_MS; the error is logged", async () => {
    const calls = { room: 0 }
    const hanging: SnapshotStore = {
      ...memorySnapshotStore(),
      // Never answers (no timer either: a hang, not a slow reply).
      room: () => {
        calls.room += 1
        return new Promise<string>(() => {})
      }
    }
    const { records, logger } = recordingLogger()
    const server = await start({
      matrixStore: hanging,
      logger,
      env: { MATRIX_REQUEST_TIMEOUT_MS: "300", SHUTDOWN_DEADLINE_MS: "300" }
    })
    try {
      const headers = await headersFor(await generateSigner(), server.app.oracleDid)
      const started = performance.now()
      await turn(server.url, "hang", headers)
      // Generous: the turn itself takes milliseconds; without the bound it would never end.
      expect(performance.now() - started).toBeLessThan(300 + 5_000)
      const logged = records.filter((r) => r.level === "error" && /matrix restore/.test(r.message))
      expect(logged).toHaveLength(1)
      expect(logged[0]!.message).toMatch(/did not finish within 300 ms/)
      // The same user's next requests do not wait on the hung restore again.
      await turn(server.url, "hang", headers)
      expect((await call(`${server.url}/messages/hang`, { headers })).body.messages).toHaveLength(10)
      expect(calls.room).toBe(1)
      expect(records.filter((r) => r.level === "error" && /matrix restore/.test(r.message))).toHaveLength(1)
    } finally {
      await server.stop()
    }
  })
})

describe("two hosts serving one user at once", () => {
  it("the host whose database no longer descends from the room's snapshot says, at close, that its flush was refused", async () => {
    const inner = memorySnapshotStore()
    let written = 0
    const waiters: Array<{ n: number; resolve: () => void }> = []
    const store: SnapshotStore = {
      ...inner,
      writePointer: async (...args) => {
        await inner.writePointer(...args)
        written += 1
        for (const w of waiters.filter((w) => written >= w.n)) w.resolve()
      }
    }
    const pointers = (n: number) =>
      written >= n ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ n, resolve }))
    const signer = await generateSigner()
    const a = recordingLogger()
    // Host A checks the room only once per user: it will not notice host B's snapshot in time.
    const hostA = await start({
      matrixStore: store,
      logger: a.logger,
      env: { MATRIX_RECHECK_AFTER_MS: "3600000" }
    })
    try {
      await turn(hostA.url, "s", await headersFor(signer, hostA.app.oracleDid))
      await pointers(1) // A's debounced sync after the turn
      const hostB = await start({ matrixStore: store })
      try {
        await turn(hostB.url, "s", await headersFor(signer, hostB.app.oracleDid))
      } finally {
        await hostB.stop() // B's flush: the room now holds B's snapshot, descended from A's
      }
      expect(written).toBe(2)
      await turn(hostA.url, "s", await headersFor(signer, hostA.app.oracleDid))
    } finally {
      await hostA.stop()
    }
    // A's new state diverged from the room's: never uploaded over it, and the close says so.
    expect(written).toBe(2)
    expect(a.records.find((r) => r.message === "matrix flush incomplete")).toMatchObject({
      level: "warn",
      fields: { failed: 0, timedOut: 0, refused: 1 }
    })
  })
})

describe("what reaches the room besides turns", () => {
  it("a session deleted or created after the last turn's sync is in the room the next host restores", async () => {
    const inner = memorySnapshotStore()
    let written = 0
    const store: SnapshotStore = {
      ...inner,
      writePointer: async (...args) => {
        await inner.writePointer(...args)
        written += 1
      }
    }
    const signer = await generateSigner()
    const a = await start({ matrixStore: store })
    let created: string
    try {
      const headers = await headersFor(signer, a.app.oracleDid)
      await turn(a.url, "secret-chat", headers)
      // The turn's debounced sync lands: nothing of this user is pending any more.
      const until = Date.now() + 10_000
      while (written === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20))
      expect(written).toBe(1)
      expect((await call(`${a.url}/sessions/secret-chat`, { method: "DELETE", headers })).status).toBe(200)
      const made = await call(`${a.url}/sessions`, { method: "POST", headers })
      expect(made.status).toBe(201)
      created = made.body.sessionId
    } finally {
      await a.stop() // graceful close: flushes what is pending
    }
    const b = await start({ matrixStore: store })
    try {
      const headers = await headersFor(signer, b.app.oracleDid)
      const sessions = await call(`${b.url}/sessions`, { headers })
      expect(sessions.body.sessions.map((s: { sessionId: string }) => s.sessionId)).toEqual([created])
      expect((await call(`${b.url}/messages/secret-chat`, { headers })).status).toBe(404)
    } finally {
      await b.stop()
    }
  })
})
