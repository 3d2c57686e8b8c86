/**
 * A user's database damaged between two runs of the server, end to end:
 * - the turn proceeds on an empty state, the host's logger says what happened, and the damaged
 *   file is kept byte for byte beside the fresh one;
 * - with Matrix, the fresh database is never uploaded over the room's good snapshot, and the
 *   next host to serve the user brings that snapshot back (the fresh database's turn kept aside).
 */
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { memorySnapshotStore } from "@plugboard/matrix"
import { generateSigner } from "@plugboard/ucan"
import { afterEach, describe, expect, it } from "vitest"
import { call, collect, headersFor, type Running, recordingLogger, start, stream } from "./helpers.js"

const dirs: Array<string> = []
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

/** Closes the app but keeps its data directory for the next run. */
const closeKeeping = async (running: Running) => {
  dirs.push(running.dir)
  await running.app.close(5_000)
}

const usersDir = (dataDir: string) => join(dataDir, "users")
const userFile = (dataDir: string) => {
  const files = readdirSync(usersDir(dataDir)).filter((f) => /^u-[0-9a-f]{64}\.sqlite$/.test(f))
  expect(files).toHaveLength(1)
  return join(usersDir(dataDir), files[0]!)
}
const GARBAGE = Buffer.alloc(64 * 1024, 0x5a)

const turnIn = async (url: string, session: string, headers: Record<string, string>, message: string) => {
  const events = await collect((await stream(url, session, headers, message)).events)
  expect(events.filter((e) => e._tag === "error")).toEqual([])
  expect(events.at(-1)?._tag).toBe("done")
  return events
}
const messageTypes = async (url: string, session: string, headers: Record<string, string>) => {
  const history = await call(`${url}/messages/${session}`, { headers })
  expect(history.status).toBe(200)
  return (history.body.messages as Array<{ type: string; content: string }>).map((m) => m.type)
}

describe("a user database damaged between two runs", () => {
  it("the turn proceeds on an empty state, the host logs it, the damaged file is kept as it was", async () => {
    const signer = await generateSigner()
    const a = await start()
    await turnIn(a.url, "trip", await headersFor(signer, a.app.oracleDid), "What's the weather in Berlin?")
    await closeKeeping(a)
    writeFileSync(userFile(a.dir), GARBAGE)

    const { records, logger } = recordingLogger()
    const b = await start({ logger, env: { PLUGBOARD_DATA_DIR: a.dir } })
    try {
      const headers = await headersFor(signer, b.app.oracleDid)
      await turnIn(b.url, "trip", headers, "What's the weather in Tokyo?")
      // One turn's worth of messages: the fresh database holds only this turn.
      expect(await messageTypes(b.url, "trip", headers)).toEqual(["human", "ai", "tool", "ai", "tool", "ai"])
      const report = records.find((r) => r.message.includes("moved aside, a fresh one started"))
      expect(report?.level).toBe("error")
      expect(report?.fields).toMatchObject({ reason: "not-a-database", path: userFile(a.dir) })
      const movedTo = report?.fields?.movedTo as string
      expect(movedTo).toMatch(/\.corrupt-/)
      expect(readFileSync(movedTo).equals(GARBAGE)).toBe(true)
    } finally {
      await closeKeeping(b)
    }
  })

  it("with Matrix: the fresh database is never uploaded over the room's snapshot, which the next host brings back", async () => {
    const store = memorySnapshotStore()
    const signer = await generateSigner()
    const a = await start({ matrixStore: store })
    await turnIn(a.url, "trip", await headersFor(signer, a.app.oracleDid), "What's the weather in Berlin?")
    await closeKeeping(a) // flushes the user's snapshot to the room
    const good = [...store.pointers.values()]
    expect(good).toHaveLength(1)
    writeFileSync(userFile(a.dir), GARBAGE)

    // Host B serves the next turn on a fresh database and, at close, refuses to upload it.
    const bLog = recordingLogger()
    const b = await start({ matrixStore: store, logger: bLog.logger, env: { PLUGBOARD_DATA_DIR: a.dir } })
    await turnIn(b.url, "trip", await headersFor(signer, b.app.oracleDid), "What's the weather in Tokyo?")
    await closeKeeping(b)
    expect([...store.pointers.values()]).toEqual(good)
    expect(store.media.size).toBe(1)
    expect(bLog.records.some((r) => r.level === "error" && /diverged/.test(r.message))).toBe(true)
    expect(bLog.records.find((r) => r.message === "matrix flush incomplete")?.fields).toMatchObject({
      refused: 1
    })

    // Host C, on the same directory: the room's snapshot is back, B's turn kept beside it.
    const c = await start({ matrixStore: store, env: { PLUGBOARD_DATA_DIR: a.dir } })
    try {
      const headers = await headersFor(signer, c.app.oracleDid)
      expect(await messageTypes(c.url, "trip", headers)).toEqual(["human", "ai", "tool", "ai", "tool", "ai"])
      const history = await call(`${c.url}/messages/trip`, { headers })
      expect(history.body.messages[0].content).toBe("What's the weather in Berlin?")
      const kept = readdirSync(usersDir(a.dir))
      expect(kept.filter((f) => /\.corrupt-[^.]*$/.test(f))).toHaveLength(1)
      expect(kept.filter((f) => /\.conflict-[^.]*$/.test(f))).toHaveLength(1)
    } finally {
      await closeKeeping(c)
    }
  })
})
