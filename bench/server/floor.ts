/**
 * Child process of `pnpm bench server`: the floor, the baseline (`bare-langgraph.ts`) plus only the
 * per-turn work that issue #16, the wire contract and DESIGN.md require of any server, each done
 * the cheapest way this machine offers. It answers how close to the baseline a server that meets
 * those requirements can be, whoever writes it: the headroom plugboard has is its distance to the
 * floor, not to the baseline.
 *
 * What it adds to the baseline, per streamed turn:
 * - UCAN auth: the request's invocation verified against the oracle's key (accepted tokens kept,
 *   as plugboard keeps them), and a per-user rate limit (a fixed window in memory);
 * - a file per user: the user's sessions, runs and checkpoints live in one SQLite file of theirs;
 * - the session, looked up and created on first contact (one row), and its activity time updated
 *   when the turn ends (what the session list sorts by);
 * - the run: a row created `running`, an append-only log of numbered frames, and the row ended
 *   with its status and partial text. The HTTP stream is the log's subscriber: a frame is written
 *   to the socket only once it is committed (WAL, `synchronous = NORMAL`), so a client never saw a
 *   frame a crash could lose. Appends made in one turn of the event loop share one transaction
 *   (the session's rows ride with the first frame and the `done`), and their frames leave in one
 *   socket write;
 * - the SDK 1.4 frames: `id:` on each, the `run` frame, `tool_call` `isRunning` and `done` for
 *   each call, the answer's `message` chunks, `done {status, partialText}`; the `X-Run-Id` and
 *   `X-Request-Id` headers;
 * - the graph state of seed 004 (`AgentState`, the thirteen channels, full copies of the
 *   messages), with `loadedPlugins` updated by the load;
 * - one turn per session at a time (an in-process lock) and the turn's abort controller.
 *
 * What it leaves out, although plugboard must do it (so the floor still errs on the fast side):
 * the catalog's offer and Tier-1 prompt (the model is offered the baseline's two definitions),
 * plugin middleware, the validation retry and the gate, messages as deltas, the session's title,
 * the file's health check and owner, and every error path. Its graph runs the model ⇄ tools loop
 * in one node, as plugboard's does (`AgentLoop.ts`). In process on a `MemorySaver` (2026-11-26,
 * six alternating rounds of 300 turns), plugboard's agent costs 2.18 ms of CPU per turn, this
 * graph 1.49 and the baseline's two-node graph 3.07.
 * Checkpoints: LangChain's `SqliteSaver` with `durability: "exit"`, as the baseline, on its own
 * connection to the user's file.
 *
 * Protocol with the orchestrator: `ipc.ts`, as the other children.
 */
import { createHash, randomUUID } from "node:crypto"
import type { ServerResponse } from "node:http"
import { createRequire } from "node:module"
import { join } from "node:path"
import { ScriptedChatModel } from "@plugboard/models"
import { loadOrCreateSigner, makeUcanVerifier } from "@plugboard/ucan"
import {
  type FloorToolCall,
  floorGraph,
  floorInput
} from "../../packages/adapters/langgraph/test/floorGraph.js"
import { definitions, messageServer, SqliteSaver } from "./bare.js"
import { serveHttpWindows, type TurnRecorder } from "./ipc.js"
import { respond } from "./script.js"

const dataDir = process.env.BENCH_DATA_DIR
if (dataDir === undefined) throw new Error("BENCH_DATA_DIR is not set")

/** What the floor uses of better-sqlite3 (the workspace root has no types for it). */
interface Statement {
  run(...params: ReadonlyArray<unknown>): unknown
  get(...params: ReadonlyArray<unknown>): unknown
  pluck(): Statement
}
interface Sqlite {
  pragma(source: string): unknown
  exec(source: string): unknown
  prepare(source: string): Statement
  transaction<A>(fn: (a: A) => void): (a: A) => void
  close(): void
}
// better-sqlite3 is a dependency of packages/adapters/sqlite, not of the workspace root.
const Database = createRequire(new URL("../../packages/adapters/sqlite/package.json", import.meta.url))(
  "better-sqlite3"
) as new (
  filename: string
) => Sqlite

const model = new ScriptedChatModel({ respond, model: "floor", maxRecordedCalls: 100 })

// UCAN auth: the oracle's key (the one plugboard is given, so the load client's tokens are good
// on both), and a verifier that keeps accepted tokens, as plugboard's does.
const keyFile = process.env.BENCH_ORACLE_KEY ?? join(dataDir, "oracle.key")
const { signer } = await loadOrCreateSigner(keyFile)
const verifier = makeUcanVerifier({ oracleSigner: signer })
const header = (value: string | ReadonlyArray<string> | undefined) =>
  typeof value === "string" ? value : undefined

// The rate limit: a fixed window per user, raised out of the way as plugboard's is.
const LIMIT = 1_000_000_000
const WINDOW_MS = 60_000
const windows = new Map<string, { start: number; count: number }>()
const allowed = (did: string, now: number): boolean => {
  let w = windows.get(did)
  if (w === undefined || now - w.start >= WINDOW_MS) {
    w = { start: now, count: 0 }
    windows.set(did, w)
  }
  return ++w.count <= LIMIT
}

/** One change to a user's file, and the frame its response gets once the change is committed. */
interface Pending {
  readonly apply: () => void
  readonly res: ServerResponse
  readonly sse: string
  readonly last: boolean
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS sessions (session_id TEXT PRIMARY KEY, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, request_id TEXT NOT NULL,
  status TEXT NOT NULL, created_at INTEGER NOT NULL, ended_at INTEGER, partial_text TEXT NOT NULL DEFAULT '') STRICT;
CREATE TABLE IF NOT EXISTS frames (run_id TEXT NOT NULL, id INTEGER NOT NULL, event TEXT NOT NULL, data TEXT NOT NULL,
  PRIMARY KEY (run_id, id)) STRICT, WITHOUT ROWID;
`

/**
 * A user's file: their sessions, runs and frames (this connection) and their checkpoints (the
 * saver's own connection to the same file), with the graph compiled on that saver. Appends made
 * in one turn of the event loop commit in one transaction.
 */
const openUser = (did: string) => {
  const file = join(dataDir, `${createHash("sha256").update(did).digest("hex").slice(0, 32)}.sqlite`)
  const db = new Database(file)
  db.pragma("journal_mode = WAL")
  db.pragma("synchronous = NORMAL")
  db.exec(SCHEMA)
  const saver = SqliteSaver.fromConnString(file)
  const statements = {
    findSession: db.prepare("SELECT 1 FROM sessions WHERE session_id = ?").pluck(),
    createSession: db.prepare("INSERT INTO sessions (session_id, created_at, updated_at) VALUES (?, ?, ?)"),
    touchSession: db.prepare("UPDATE sessions SET updated_at = ? WHERE session_id = ?"),
    createRun: db.prepare(
      "INSERT INTO runs (run_id, session_id, request_id, status, created_at) VALUES (?, ?, ?, 'running', ?)"
    ),
    insertFrame: db.prepare("INSERT INTO frames (run_id, id, event, data) VALUES (?, ?, ?, ?)"),
    endRun: db.prepare("UPDATE runs SET status = ?, ended_at = ?, partial_text = ? WHERE run_id = ?")
  }
  let pending: Array<Pending> = []
  const commitGroup = db.transaction((group: ReadonlyArray<Pending>) => {
    for (const p of group) p.apply()
  })
  const flush = () => {
    const group = pending
    pending = []
    commitGroup(group)
    // One socket write per response per group.
    const out = new Map<ServerResponse, { text: string; last: boolean }>()
    for (const p of group) {
      const o = out.get(p.res) ?? { text: "", last: false }
      o.text += p.sse
      o.last ||= p.last
      out.set(p.res, o)
    }
    for (const [res, o] of out) o.last ? res.end(o.text) : res.write(o.text)
  }
  return {
    db,
    saver,
    graph: floorGraph(model, definitions, "weather", saver),
    statements,
    append: (p: Pending) => {
      if (pending.length === 0) setImmediate(flush)
      pending.push(p)
    }
  }
}
type UserFile = ReturnType<typeof openUser>
const users = new Map<string, UserFile>()
const userFile = (did: string): UserFile => {
  let user = users.get(did)
  if (user === undefined) {
    user = openUser(did)
    users.set(did, user)
  }
  return user
}

/** A run's log: numbered frames, each appended, then written once committed. */
const frameOf = (user: UserFile, runId: string, res: ServerResponse) => {
  let id = 0
  return (event: string, data: unknown, also?: () => void, last = false) => {
    const n = ++id
    const json = JSON.stringify(data)
    user.append({
      apply: () => {
        also?.()
        user.statements.insertFrame.run(runId, n, event, json)
      },
      res,
      sse: `id: ${n}\nevent: ${event}\ndata: ${json}\n\n`,
      last
    })
  }
}

const sessionTurns = new Map<string, Promise<void>>()
const live = new Map<string, AbortController>()

let recorder: TurnRecorder | undefined

const runTurn = async (
  did: string,
  sessionId: string,
  message: string,
  res: ServerResponse,
  received: number
) => {
  const user = userFile(did)
  const { findSession, createSession, touchSession, createRun, endRun } = user.statements
  const runId = randomUUID()
  const requestId = randomUUID()
  const abort = new AbortController()
  live.set(runId, abort)
  res.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache, no-transform",
    "x-accel-buffering": "no",
    "x-run-id": runId,
    "x-request-id": requestId
  })
  const frame = frameOf(user, runId, res)
  const now = Date.now()
  frame("run", { runId, sessionId, requestId }, () => {
    if (findSession.get(sessionId) === undefined) createSession.run(sessionId, now, now)
    createRun.run(runId, sessionId, requestId, now)
  })
  let partialText = ""
  let status = "finished"
  try {
    const stream = await user.graph.stream(floorInput(message, did), {
      configurable: { thread_id: sessionId },
      streamMode: ["messages", "custom"],
      durability: "exit",
      signal: abort.signal
    })
    // As the baseline: LangGraph may repeat the whole message after its chunks.
    let streamed = ""
    for await (const [mode, chunk] of stream as AsyncIterable<[string, unknown]>) {
      if (mode === "custom") {
        frame("tool_call", { requestId, sessionId, ...(chunk as FloorToolCall) })
        continue
      }
      const [piece, meta] = chunk as [{ content?: unknown; getType(): string }, { langgraph_node?: string }]
      // The loop's node also ends with its ToolMessages, which are not the answer.
      if (meta.langgraph_node !== "agent" || piece.getType() !== "ai") continue
      const text = typeof piece.content === "string" ? piece.content : ""
      if (text.length === 0) continue
      if (text === streamed) {
        streamed = ""
        continue
      }
      streamed += text
      partialText += text
      frame("message", { content: text, timestamp: new Date().toISOString() })
    }
  } catch {
    status = abort.signal.aborted ? "aborted" : "failed"
  }
  live.delete(runId)
  const done = status === "finished" ? { status } : { status, partialText }
  const ended = Date.now()
  const end = () => {
    endRun.run(status, ended, partialText, runId)
    touchSession.run(ended, sessionId)
  }
  frame("done", done, end, true)
  recorder?.turnEnded(received)
}

const refuse = (res: ServerResponse, status: number, message: string) =>
  res
    .writeHead(status, { "content-type": "application/json" })
    .end(JSON.stringify({ statusCode: status, message }))

// Auth, the rate limit, then one turn per session: the next starts when the previous one ended.
const server = messageServer(async (sessionId, message, res, received, headers) => {
  let did: string
  try {
    did = (
      await verifier.verify({
        authorization: header(headers.authorization),
        authType: header(headers["x-auth-type"]),
        ucanDelegation: header(headers["x-ucan-delegation"])
      })
    ).did
  } catch (e) {
    refuse(res, 401, e instanceof Error ? e.message : "unauthorized")
    return
  }
  if (!allowed(did, Date.now())) {
    refuse(res, 429, "Too many requests")
    return
  }
  const key = `${did}\u0000${sessionId}`
  const previous = sessionTurns.get(key)
  const turn = (previous ?? Promise.resolve()).then(() => runTurn(did, sessionId, message, res, received))
  sessionTurns.set(key, turn)
  await turn
  if (sessionTurns.get(key) === turn) sessionTurns.delete(key)
})
recorder = await serveHttpWindows(
  server,
  () => {
    for (const user of users.values()) {
      ;(user.saver as unknown as { db?: { close(): void } }).db?.close()
      user.db.close()
    }
  },
  signer.did()
)
