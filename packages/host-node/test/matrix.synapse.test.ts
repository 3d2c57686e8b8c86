/**
 * Replication across hosts through a real Synapse (scripts/synapse/synapse.sh, brought up by
 * scripts/ci-services.sh): host A serves a turn that loads the weather plugin, closes (which
 * flushes the sync into the oracle's Matrix room), and host B — a fresh data directory, the same
 * oracle identity and Matrix account — serves the same history and continues the thread with the
 * plugin still loaded. Skipped, with the reason in the suite name, when no homeserver is up.
 */
import { randomUUID } from "node:crypto"
import { type MatrixAccount, matrixSnapshotStore, registerWithSharedSecret } from "@plugboard/matrix"
import { storageKey } from "@plugboard/sqlite"
import { generateSigner, type Signer } from "@plugboard/ucan"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { SKIP_REASON, synapseEnv } from "../../adapters/matrix/test/helpers.js"
import { call, collect, headersFor, type Running, start, stream } from "./helpers.js"

const env = synapseEnv()
if (env === undefined) console.warn(`[host-node] Matrix host suite ${SKIP_REASON}`)

/** A logger that keeps every line. */
const recording = () => {
  const lines: Array<string> = []
  const at = (level: string) => (message: string, fields?: Record<string, unknown>) =>
    void lines.push(`${level} ${message}${fields === undefined ? "" : ` ${JSON.stringify(fields)}`}`)
  return { lines, logger: { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") } }
}

const toolCalls = (events: ReadonlyArray<{ _tag: string; toolName?: string; status?: string }>) =>
  events.filter((e) => e._tag === "tool_call" && e.status === "isRunning").map((e) => e.toolName)

describe.skipIf(env === undefined)(
  `host A to host B through Synapse${env ? "" : ` — ${SKIP_REASON}`}`,
  () => {
    let account: MatrixAccount
    let oracle: Signer
    const running: Array<Running> = []

    beforeAll(async () => {
      account = await registerWithSharedSecret({
        baseUrl: env?.url ?? "",
        sharedSecret: env?.secret ?? "",
        username: `oracle-host-${randomUUID().slice(0, 8)}`,
        password: randomUUID()
      })
      oracle = await generateSigner()
    })
    afterAll(async () => {
      for (const r of running.splice(0)) await r.stop()
    })

    /** A host with its own fresh data directory, the shared oracle identity and Matrix account. */
    const host = async () => {
      const { lines, logger } = recording()
      const server = await start({
        identity: { signer: oracle },
        logger,
        env: {
          MATRIX_BASE_URL: account.baseUrl,
          MATRIX_USER_ID: account.userId,
          MATRIX_ACCESS_TOKEN: account.accessToken,
          MATRIX_REQUEST_TIMEOUT_MS: "10000"
        }
      })
      running.push(server)
      const stop = async () => {
        running.splice(running.indexOf(server), 1)
        await server.stop()
      }
      return { ...server, lines, stop }
    }

    it("a thread served on host A is restored on host B with the same messages and loadedPlugins, and continues there", async () => {
      const user = await generateSigner()
      const room = matrixSnapshotStore(account, { requestTimeoutMs: 10_000 })
      const key = storageKey(user.did())

      const a = await host()
      expect(a.app.oracleDid).toBe(oracle.did())
      const headersA = await headersFor(user, a.app.oracleDid)
      const first = await collect(
        (await stream(a.url, "travels", headersA, "What's the weather in Berlin?")).events
      )
      expect(first.at(-1)?._tag).toBe("done")
      expect(first.some((e) => e._tag === "error")).toBe(false)
      expect(toolCalls(first)).toEqual(["load_capability", "get_current_weather"])
      const historyA = await call(`${a.url}/messages/travels`, { headers: headersA })
      expect(historyA.status).toBe(200)
      expect(historyA.body.messages.map((m: { type: string }) => m.type)).toEqual([
        "human",
        "ai",
        "tool",
        "ai",
        "tool",
        "ai"
      ])
      // The turn's sync is still debounced: closing A flushes it into the room.
      await a.stop()
      const uploaded = await room.readPointer(await room.room(key, { create: false }), key)
      expect(uploaded.previousSha256).toBeUndefined()
      expect(a.lines.filter((l) => l.startsWith("error") || l.startsWith("warn"))).toEqual([])
      expect(a.lines.some((l) => l.startsWith("info [matrix-sync] synced"))).toBe(true)

      const b = await host()
      expect(b.dir).not.toBe(a.dir)
      const headersB = await headersFor(user, b.app.oracleDid)
      const historyB = await call(`${b.url}/messages/travels`, { headers: headersB })
      expect(historyB.status).toBe(200)
      expect(historyB.body.messages).toEqual(historyA.body.messages)
      expect(b.lines.some((l) => l.startsWith(`info [matrix-sync] restored ${user.did()}`))).toBe(true)
      const sessions = await call(`${b.url}/sessions`, { headers: headersB })
      expect(sessions.body).toMatchObject({ total: 1, sessions: [{ sessionId: "travels" }] })

      // The restored checkpoint has weather loaded: the next turn calls its tool at once.
      const next = await collect(
        (await stream(b.url, "travels", headersB, "What's the weather in Tokyo?")).events
      )
      expect(next.at(-1)?._tag).toBe("done")
      expect(toolCalls(next)).toEqual(["get_current_weather"])
      const continued = await call(`${b.url}/messages/travels`, { headers: headersB })
      expect(continued.body.messages.slice(0, 6)).toEqual(historyA.body.messages)
      expect(continued.body.messages.map((m: { type: string }) => m.type).slice(6)).toEqual([
        "human",
        "ai",
        "tool",
        "ai"
      ])
      expect(JSON.stringify(continued.body.messages.at(-1))).toContain("Tokyo")

      // B's close uploads the continued thread over A's snapshot (same lineage).
      await b.stop()
      const after = await room.readPointer(await room.room(key, { create: false }), key)
      expect(after.previousSha256).toBe(uploaded.sha256)
      expect(b.lines.filter((l) => l.startsWith("error") || l.startsWith("warn"))).toEqual([])
    }, 60_000)
  }
)
