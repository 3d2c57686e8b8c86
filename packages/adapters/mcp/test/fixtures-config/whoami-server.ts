/**
 * A real Streamable HTTP MCP server that wants to know who calls: every HTTP request must carry
 * an invocation signed by the oracle (`readInvocationUser`), else 401 before the MCP layer sees
 * it; a session belongs to the user who opened it (another user's invocation on it is a 403). Its
 * one tool, `whoami`, answers the user DID of the request that called it.
 */
import { randomUUID } from "node:crypto"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { readInvocationUser } from "../../src/Ucan.js"

/** What the server saw, for assertions. */
export interface WhoamiRequest {
  readonly method: string
  readonly status: number
  readonly user?: string | undefined
}

export interface WhoamiServer {
  readonly url: string
  readonly requests: ReadonlyArray<WhoamiRequest>
  /** Sessions opened, with the user each belongs to. */
  readonly sessions: ReadonlyMap<string, string>
  readonly close: () => Promise<void>
}

export const startWhoamiServer = async (options: {
  readonly oracleDid: string
  readonly serverName: string
  /** The header the invocation comes in (default Authorization, as `Bearer <token>`). */
  readonly header?: string
}): Promise<WhoamiServer> => {
  const header = (options.header ?? "authorization").toLowerCase()
  const requests: WhoamiRequest[] = []
  const transports = new Map<string, StreamableHTTPServerTransport>()
  const owners = new Map<string, string>()

  const refuse = (res: ServerResponse, req: IncomingMessage, status: number, message: string) => {
    requests.push({ method: req.method ?? "", status })
    res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ error: message }))
  }

  const newServer = () => {
    const server = new McpServer({ name: "whoami", version: "1.0.0" })
    server.registerTool(
      "whoami",
      { description: "Says which user the oracle says is calling." },
      async (extra) => {
        const user = (extra.authInfo?.extra as { user?: string } | undefined)?.user ?? "nobody"
        return { content: [{ type: "text", text: user }] }
      }
    )
    return server
  }

  const http = createServer(async (req, res) => {
    const raw = req.headers[header]
    const value = Array.isArray(raw) ? raw[0] : raw
    const token =
      value === undefined ? undefined : header === "authorization" ? value.replace(/^Bearer /, "") : value
    if (token === undefined || token === "") return refuse(res, req, 401, "no invocation")
    let user: string
    try {
      user = await readInvocationUser(token, { oracleDid: options.oracleDid, server: options.serverName })
    } catch (e) {
      return refuse(res, req, 401, (e as Error).message)
    }
    const sessionId = req.headers["mcp-session-id"]
    let transport: StreamableHTTPServerTransport | undefined
    if (typeof sessionId === "string") {
      transport = transports.get(sessionId)
      if (transport === undefined) return refuse(res, req, 404, "unknown session")
      // A session is its opener's: one user's invocation never rides on another's session.
      if (owners.get(sessionId) !== user) return refuse(res, req, 403, "not your session")
    } else {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          transports.set(id, transport!)
          owners.set(id, user)
        }
      })
      transport.onclose = () => {
        if (transport?.sessionId !== undefined) transports.delete(transport.sessionId)
      }
      await newServer().connect(transport)
    }
    requests.push({ method: req.method ?? "", status: 200, user })
    const authed = req as IncomingMessage & { auth?: unknown }
    authed.auth = { token, clientId: user, scopes: [], extra: { user } }
    await transport.handleRequest(authed as never, res)
  })
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve))
  const { port } = http.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    requests,
    sessions: owners,
    close: async () => {
      for (const t of transports.values()) await t.close().catch(() => {})
      http.closeAllConnections()
      await new Promise<void>((resolve) => http.close(() => resolve()))
    }
  }
}
