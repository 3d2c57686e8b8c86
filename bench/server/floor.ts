/**
 * Child process of `pnpm bench server`: the floor, the baseline (`bare-langgraph.ts`) plus only the
 * per-turn work issue #16 and the wire contract require of any server, each done the cheapest way
 * this machine offers. It answers how close to the baseline a server that meets those
 * requirements can be, whoever writes it: the headroom plugboard has is its distance to the floor,
 * not to the baseline.
 *
 * What it adds to the baseline, per streamed turn:
 * - the session, looked up and created on first contact (one row);
 * - the run: a row created `running`, an append-only log of numbered frames, and the row ended
 *   with its status and partial text. The HTTP stream is the log's subscriber: a frame is written
 *   to the socket only once it is committed (WAL, `synchronous = NORMAL`), so a client never saw a
 *   frame a crash could lose. Appends made in one turn of the event loop share one transaction,
 *   and their frames leave in one socket write;
 * - the SDK 1.4 frames: `id:` on each, the `run` frame, `tool_call` `isRunning` and `done` for
 *   each call, the answer's `message` chunks, `done {status, partialText}`; the `X-Run-Id` and
 *   `X-Request-Id` headers;
 * - the graph state of seed 004 (`AgentState`, the thirteen channels, full copies of the
 *   messages), with `loadedPlugins` updated by the load;
 * - one turn per session at a time (an in-process lock) and the turn's abort controller.
 *
 * What it leaves out, although plugboard must do it (so the floor errs on the fast side): UCAN
 * verification and the rate limit (plugboard's `auth` and `limit` stages measure 0.02 to 0.08 ms
 * a turn), a file per user (everything here is in two shared files), the catalog's offer and
 * Tier-1 prompt (the model is offered the baseline's two definitions), messages as deltas, and
 * every error path. Checkpoints: LangChain's `SqliteSaver` with `durability: "exit"`, as the
 * baseline.
 *
 * Protocol with the orchestrator: `ipc.ts`, as the other children.
 */
import { randomUUID } from "node:crypto"
import type { ServerResponse } from "node:http"
import { createRequire } from "node:module"
import { join } from "node:path"
import { ScriptedChatModel } from "@plugboard/models"
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
const saver = SqliteSaver.fromConnString(join(dataDir, "checkpoints.sqlite"))
const graph = floorGraph(model, definitions, "weather", saver)

const db = new Database(join(dataDir, "runs.sqlite"))
db.pragma("journal_mode = WAL")
db.pragma("synchronous = NORMAL")
db.exec(`
CREATE TABLE sessions (session_id TEXT PRIMARY KEY, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL) STRICT;
CREATE TABLE runs (run_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, request_id TEXT NOT NULL,
  status TEXT NOT NULL, created_at INTEGER NOT NULL, ended_at INTEGER, partial_text TEXT NOT NULL DEFAULT '') STRICT;
CREATE TABLE frames (run_id TEXT NOT NULL, id INTEGER NOT NULL, event TEXT NOT NULL, data TEXT NOT NULL,
  PRIMARY KEY (run_id, id)) STRICT, WITHOUT ROWID;
`)
const findSession = db.prepare("SELECT 1 FROM sessions WHERE session_id = ?").pluck()
const createSession = db.prepare("INSERT INTO sessions (session_id, created_at, updated_at) VALUES (?, ?, ?)")
const createRun = db.prepare(
  "INSERT INTO runs (run_id, session_id, request_id, status, created_at) VALUES (?, ?, ?, 'running', ?)"
)
const insertFrame = db.prepare("INSERT INTO frames (run_id, id, event, data) VALUES (?, ?, ?, ?)")
const endRun = db.prepare("UPDATE runs SET status = ?, ended_at = ?, partial_text = ? WHERE run_id = ?")

/** One change to the run store, and the frame its response gets once the change is committed. */
interface Pending {
  readonly apply: () => void
  readonly res: ServerResponse
  readonly sse: string
  readonly last: boolean
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
const append = (p: Pending) => {
  if (pending.length === 0) setImmediate(flush)
  pending.push(p)
}

/** A run's log: numbered frames, each appended, then written once committed. */
const frameOf = (runId: string, res: ServerResponse) => {
  let id = 0
  return (event: string, data: unknown, also?: () => void, last = false) => {
    const n = ++id
    const json = JSON.stringify(data)
    append({
      apply: () => {
        also?.()
        insertFrame.run(runId, n, event, json)
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

const runTurn = async (sessionId: string, message: string, res: ServerResponse, received: number) => {
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
  const frame = frameOf(runId, res)
  const now = Date.now()
  frame("run", { runId, sessionId, requestId }, () => {
    if (findSession.get(sessionId) === undefined) createSession.run(sessionId, now, now)
    createRun.run(runId, sessionId, requestId, now)
  })
  let partialText = ""
  let status = "finished"
  try {
    const stream = await graph.stream(floorInput(message, "did:key:floor"), {
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
      const [piece, meta] = chunk as [{ content?: unknown }, { langgraph_node?: string }]
      if (meta.langgraph_node !== "model") continue
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
  frame("done", done, () => endRun.run(status, Date.now(), partialText, runId), true)
  recorder?.turnEnded(received)
}

// One turn per session: the next starts when the previous one ended.
const server = messageServer(async (sessionId, message, res, received) => {
  const previous = sessionTurns.get(sessionId)
  const turn = (previous ?? Promise.resolve()).then(() => runTurn(sessionId, message, res, received))
  sessionTurns.set(sessionId, turn)
  await turn
  if (sessionTurns.get(sessionId) === turn) sessionTurns.delete(sessionId)
})
recorder = await serveHttpWindows(server, () => {
  ;(saver as unknown as { db?: { close(): void } }).db?.close()
  db.close()
})
