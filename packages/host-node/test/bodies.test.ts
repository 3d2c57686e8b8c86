/**
 * Request bodies at their limits, over real sockets: a body nested
 * deeper than the depth limit is a JSON 400 naming the limit, in any field and on every route
 * that reads JSON; a chunked body over MAX_BODY_BYTES is a JSON 413 and the connection closes
 * cleanly after it.
 */
import { request } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, newSession, type Running, start, user } from "./helpers.js"

let server: Running
beforeAll(async () => {
  server = await start({ env: { MAX_BODY_BYTES: "65536" } })
})
afterAll(() => server.stop())

const nested = (depth: number, leaf = "1") => "[".repeat(depth) + leaf + "]".repeat(depth)

describe("deep JSON", () => {
  it("a body nested 5,000+ levels in any field is a 400 naming the limit", async () => {
    const u = await user(server.app.oracleDid)
    const session = await newSession(server.url, u.headers)
    for (const [path, body] of [
      [`/messages/${session}`, `{"message":"hi","metadata":${nested(6000)}}`],
      [`/messages/${session}`, `{"message":${nested(20000)}}`],
      ["/messages/abort", `{"sessionId":${nested(5000)}}`],
      ["/sessions", `{"title":{"a":${nested(10000, '{"b":1}')}}}`],
      ["/sessions", nested(30000)]
    ] as const) {
      const r = await call(`${server.url}${path}`, { method: "POST", headers: u.headers, body })
      expect(r.status, `${path} ${body.slice(0, 40)}`).toBe(400)
      expect(r.body).toMatchObject({ statusCode: 400, error: "Bad Request" })
      expect(r.body.message).toMatch(/nested deeper than 64 levels/)
    }
  })

  it("64 levels are accepted, 65 are not; brackets inside strings do not count", async () => {
    const u = await user(server.app.oracleDid)
    const post = (body: string) =>
      call(`${server.url}/sessions`, { method: "POST", headers: u.headers, body })
    expect((await post(`{"extra":${nested(63)}}`)).status).toBe(201)
    expect((await post(`{"extra":"${"[{".repeat(5000)}\\"${"[".repeat(100)}"}`)).status).toBe(201)
    const over = await post(`{"extra":${nested(64)}}`)
    expect(over).toMatchObject({ status: 400, body: { statusCode: 400 } })
    expect(over.body.message).toMatch(/nested deeper than 64 levels/)
  })
})

/**
 * Posts `chunks` chunks of `chunkSize` bytes with `Transfer-Encoding: chunked` (no
 * Content-Length), one write per chunk; returns the answer and whether the socket then closed
 * without an error (a reset shows as `socketError`).
 */
const postChunked = (
  url: string,
  path: string,
  headers: Record<string, string>,
  chunks: number,
  chunkSize: number
) =>
  new Promise<{
    status: number
    headers: Record<string, unknown>
    body: string
    socketError?: string
    closed: boolean
  }>((resolve, reject) => {
    const target = new URL(path, url)
    const req = request(target, {
      method: "POST",
      headers: { ...headers, "transfer-encoding": "chunked" },
      agent: false
    })
    let socketError: string | undefined
    req.on("socket", (socket) => {
      socket.on("error", (e) => {
        socketError = String(e)
      })
    })
    let answered = false
    req.on("error", (e) => {
      socketError ??= String(e)
      // Reset before any answer: nothing else will settle the promise.
      if (!answered) resolve({ status: 0, headers: {}, body: "", closed: true, socketError })
    })
    req.on("response", (response) => {
      answered = true
      let body = ""
      response.on("data", (d) => {
        body += d.toString()
      })
      response.on("end", () => {
        const socket = req.socket
        const done = () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body,
            closed: socket?.destroyed ?? true,
            ...(socketError === undefined ? {} : { socketError })
          })
        if (socket === undefined || socket === null || socket.destroyed) done()
        else socket.once("close", done)
      })
      response.on("error", reject)
    })
    const chunk = Buffer.alloc(chunkSize, 0x61)
    let written = 0
    const writeMore = () => {
      while (written < chunks) {
        if (req.destroyed) return
        written++
        if (!req.write(chunk)) {
          req.once("drain", writeMore)
          return
        }
      }
      req.end()
    }
    req.write('{"message":"')
    writeMore()
  })

describe("chunked bodies over MAX_BODY_BYTES", () => {
  it("are a JSON 413, and the connection closes cleanly after it", async () => {
    const u = await user(server.app.oracleDid)
    const session = await newSession(server.url, u.headers)
    for (const [path, chunks] of [
      [`/messages/${session}`, 40],
      ["/sessions", 40],
      ["/messages/abort", 120]
    ] as const) {
      const r = await postChunked(server.url, path, u.headers, chunks, 4096)
      expect(r.socketError, path).toBeUndefined()
      expect(r.status, path).toBe(413)
      expect(r.headers.connection).toBe("close")
      expect(JSON.parse(r.body)).toEqual({
        statusCode: 413,
        message: "The request body is larger than 65536 bytes.",
        error: "Payload Too Large"
      })
      expect(r.closed).toBe(true)
    }
    // Far past the limit (more than the server drains) the client is cut off; the server goes on.
    const flood = await postChunked(server.url, "/sessions", u.headers, 1000, 4096)
    expect(flood.status === 413 || flood.socketError !== undefined).toBe(true)
    // A chunked body under the limit is read as usual.
    const small = await postChunked(server.url, "/sessions", u.headers, 0, 1)
    expect(small.status).toBe(400) // '{"message":' alone is not JSON
    expect(JSON.parse(small.body)).toMatchObject({
      statusCode: 400,
      message: "The request body is not valid JSON."
    })
    expect((await call(`${server.url}/health`)).status).toBe(200)
  })
})
