/**
 * Child process of `pnpm bench server`: the baseline, a bare LangGraph server. `node:http`;
 * `POST /messages/:sessionId` with JSON `{message}` answers SSE: the answer's text as `message`
 * events (the model streams it in three chunks), then `done`. Behind it, the bare graph of
 * `packages/adapters/langgraph/test/bareGraph.ts` (a `StateGraph` over `MessagesAnnotation`, a
 * model node and a tool node), compiled once, with the same `ScriptedChatModel` class plugboard's
 * scripted router runs on, replaying the same three model steps (`load_capability`,
 * `get_current_weather`, the answer plugboard's router gives, streamed in three chunks) and two
 * tool calls, checkpointed by LangChain's `SqliteSaver` (`@langchain/langgraph-checkpoint-sqlite`,
 * WAL) on ONE file for every session, thread = session id, with plugboard's durability (`exit`:
 * one checkpoint write at the end of the turn; BENCH_BASELINE_DURABILITY=async or sync gives
 * LangGraph's own default, a checkpoint per step).
 *
 * One file, not one per user: the baseline has no users, and a bare server keeps one saver; the
 * saver is synchronous (better-sqlite3) in one process, so more files would add opens, not
 * parallelism. What it does NOT do, and plugboard does: authentication (plugboard verifies a UCAN
 * per request), rate limiting, the session store (a session created on first contact), the run
 * log (numbered frames kept for rejoin), the catalog's offer and prompt per model call, reasoning
 * and `tool_call` events, heartbeats. Credits are off on both sides.
 *
 * Protocol with the orchestrator: `ipc.ts` (`begin`/`end`: CPU time and the server's time per
 * turn, request received → response ended; `close`).
 */
import { join } from "node:path"
import { ScriptedChatModel } from "@plugboard/models"
import { bareGraph } from "../../packages/adapters/langgraph/test/bareGraph.js"
import { definitions, messageServer, SqliteSaver } from "./bare.js"
import { serveHttpWindows, type TurnRecorder } from "./ipc.js"
import { respond } from "./script.js"

const dataDir = process.env.BENCH_DATA_DIR
if (dataDir === undefined) throw new Error("BENCH_DATA_DIR is not set")

const model = new ScriptedChatModel({ respond, model: "bare-baseline", maxRecordedCalls: 100 })
const saver = SqliteSaver.fromConnString(join(dataDir, "checkpoints.sqlite"))
const graph = bareGraph(model, definitions, saver)

let recorder: TurnRecorder | undefined

const DURABILITY = (process.env.BENCH_BASELINE_DURABILITY ?? "exit") as "exit" | "async" | "sync"
if (!["exit", "async", "sync"].includes(DURABILITY))
  throw new Error(`BENCH_BASELINE_DURABILITY=${DURABILITY}`)

const sse = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`

const server = messageServer(async (sessionId, message, res, received) => {
  res.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive"
  })
  try {
    const stream = await graph.stream(
      { messages: [{ role: "user", content: message }] },
      { configurable: { thread_id: sessionId }, streamMode: "messages", durability: DURABILITY }
    )
    // Chunks as the model streams them; LangGraph may repeat the whole message after them.
    let streamed = ""
    for await (const [chunk, meta] of stream) {
      if (meta.langgraph_node !== "model") continue
      const text = typeof chunk.content === "string" ? chunk.content : ""
      if (text.length === 0) continue
      if (text === streamed) {
        streamed = ""
        continue
      }
      streamed += text
      res.write(sse("message", { content: text }))
    }
    res.end(sse("done", {}))
  } catch (e) {
    res.end(sse("error", { error: String(e) }) + sse("done", {}))
  }
  recorder?.turnEnded(received)
})
recorder = await serveHttpWindows(server, () => (saver as unknown as { db?: { close(): void } }).db?.close())
