/**
 * What the benchmark's `node:http` servers (the baseline, the floor) share: LangChain's
 * `SqliteSaver`, the two tool definitions their model is offered, and the HTTP front (`POST
 * /messages/:sessionId` with JSON `{message}` goes to a turn handler; anything else is a 404, and
 * a body without a non-empty `message` a 400).
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http"
import { createRequire } from "node:module"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import type { BareDefinitions, bareGraph } from "../../packages/adapters/langgraph/test/bareGraph.js"

// The workspace root does not depend on LangChain's SQLite saver; packages/adapters does (dev).
// Resolve it from there, ESM entry, so it shares @langchain/langgraph-checkpoint with the graph.
const adapters = createRequire(new URL("../../packages/adapters/package.json", import.meta.url))
const sqliteDir = join(adapters.resolve("@langchain/langgraph-checkpoint-sqlite/package.json"), "..")
/** A LangGraph checkpointer, as the graphs take it. */
export type Saver = Parameters<typeof bareGraph>[2]
/** LangChain's `SqliteSaver` (`@langchain/langgraph-checkpoint-sqlite`). */
export const { SqliteSaver } = (await import(pathToFileURL(join(sqliteDir, "dist/index.js")).href)) as {
  SqliteSaver: { fromConnString(path: string): Saver }
}

const fn = (name: string, description: string, properties: Record<string, unknown>) => ({
  type: "function",
  function: {
    name,
    description,
    parameters: { type: "object", properties, required: Object.keys(properties) }
  }
})
const loadCapability = fn("load_capability", "Load plugins by name so their tools are offered.", {
  names: { type: "array", items: { type: "string" } }
})
const currentWeather = fn(
  "get_current_weather",
  "[Weather] Current temperature, conditions, precipitation and wind for a city.",
  { city: { type: "string" } }
)
/** What the model is offered before the turn's `load_capability` (the meta-tool) and after (plus the weather tool). */
export const definitions: BareDefinitions = {
  before: [loadCapability],
  after: [loadCapability, currentWeather]
}

/**
 * One streamed turn: the session, the user's message, the response, when the request came, and
 * its headers (for a server that authenticates).
 */
export type TurnHandler = (
  sessionId: string,
  message: string,
  res: ServerResponse,
  received: number,
  headers: IncomingHttpHeaders
) => Promise<void>

/** A server answering `POST /messages/:sessionId` with `turn` (see the module doc). */
export const messageServer = (turn: TurnHandler): Server =>
  createServer((req, res) => {
    const received = performance.now()
    const match = /^\/messages\/([^/?]+)$/.exec(req.url ?? "")
    if (req.method !== "POST" || match === null) {
      res.writeHead(404).end()
      return
    }
    const sessionId = decodeURIComponent(match[1]!)
    let body = ""
    req.setEncoding("utf8")
    req.on("data", (chunk: string) => {
      body += chunk
    })
    req.on("end", () => {
      let message: unknown
      try {
        message = (JSON.parse(body) as { message?: unknown }).message
      } catch {}
      if (typeof message !== "string" || message.length === 0) {
        res.writeHead(400, { "content-type": "application/json" }).end('{"error":"message"}')
        return
      }
      void turn(sessionId, message, res, received, req.headers)
    })
  })
