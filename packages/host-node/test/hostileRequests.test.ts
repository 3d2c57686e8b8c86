/**
 * Input a hostile tester sent that the server should refuse (issue 36, items 7–9), over real
 * sockets: session ids shaped like paths, oversized ids, a JSON body sent as `text/plain`, and a
 * body shorter than its `Content-Length`.
 */
import { connect } from "node:net"
import { definePlugin, defineTool, SessionStore } from "@plugboard/core"
import { Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, type Running, start, user, weather } from "./helpers.js"

/** A tool that waits until the test opens its gate; `entered` resolves once a call is waiting. */
const gate = (() => {
  let enter!: () => void
  let release!: () => void
  const entered = new Promise<void>((resolve) => {
    enter = resolve
  })
  const opened = new Promise<void>((resolve) => {
    release = resolve
  })
  return { entered, opened, enter: () => enter(), open: () => release() }
})()

const gatedJob = definePlugin({
  name: "gated-job",
  manifest: {
    title: "Gated job",
    summary: "Runs a job that waits for the test.",
    whenToUse: ["When asked to run the gated job."],
    examples: [{ user: "Run the gated job", tool: "run_gated_job", args: {} }],
    visibility: "always"
  },
  tools: [
    defineTool({
      name: "run_gated_job",
      description: "Runs the gated job.",
      input: Schema.Struct({}),
      handler: async () => {
        gate.enter()
        await gate.opened
        return "finished"
      }
    })
  ]
})

let server: Running
beforeAll(async () => {
  server = await start({ plugins: [weather, gatedJob], env: { REQUEST_TIMEOUT_MS: "400" } })
})
afterAll(() => server.stop())

describe("session ids that should not be accepted (issue 36, item 7)", () => {
  it("a percent-encoded path never becomes a session: `..%2F..%2Fetc%2Fpasswd` and friends are a 400", async () => {
    const alice = await user(server.app.oracleDid)
    // (A literal `..` or `%2E%2E` segment never reaches the server: URL parsing removes it, as
    // browsers do; the session store's own rule refuses `.` and `..`, SessionStoreConformance.)
    for (const raw of ["..%2F..%2F..%2Fetc%2Fpasswd", "a%2Fb", "a%5Cb", "..%5C..%5Cwin.ini"]) {
      const posted = await call(`${server.url}/messages/${raw}`, {
        method: "POST",
        headers: alice.headers,
        body: { message: "hello" }
      })
      expect(posted.status, raw).toBe(400)
      expect(posted.body).toMatchObject({ statusCode: 400, error: "invalid-input" })
      expect(posted.body.message).toMatch(/sessionId must be 1\.\.256 characters/)
    }
    const listed = await call(`${server.url}/sessions`, { headers: alice.headers })
    expect(listed.body.sessions).toEqual([])
  })

  it("a 10 KB session id is a 400 naming the limit, not the router's 404", async () => {
    const alice = await user(server.app.oracleDid)
    const id = "s".repeat(10 * 1024)
    for (const [method, path] of [
      ["POST", `/messages/${id}`],
      ["GET", `/messages/${id}`],
      ["DELETE", `/sessions/${id}`]
    ] as const) {
      const answer = await call(`${server.url}${path}`, {
        method,
        headers: alice.headers,
        ...(method === "POST" ? { body: { message: "hello" } } : {})
      })
      expect(answer.status, method).toBe(400)
      expect(answer.body.message).toContain(`1..${SessionStore.MAX_SESSION_ID_LENGTH} characters`)
    }
  })
})

describe("a body is JSON only when its sender says so (issue 36, item 8)", () => {
  it("`Content-Type: text/plain` (or none) on a JSON body is a 415; nothing is created", async () => {
    const alice = await user(server.app.oracleDid)
    const { "content-type": _json, ...noType } = alice.headers
    const cases: ReadonlyArray<readonly [Record<string, string>, RegExp]> = [
      [{ ...noType, "content-type": "text/plain" }, /"text\/plain"/],
      [{ ...noType, "content-type": "application/x-www-form-urlencoded" }, /form-urlencoded/],
      [noType, /no Content-Type/]
    ]
    for (const [headers, shown] of cases) {
      for (const [path, body] of [
        ["/sessions", { title: "plain" }],
        ["/messages/plain-1", { message: "hello" }],
        ["/messages/abort", { sessionId: "plain-1" }]
      ] as const) {
        // Bytes, not a string: fetch would add `text/plain` to a string body of its own accord.
        const answer = await fetch(`${server.url}${path}`, {
          method: "POST",
          headers,
          body: new TextEncoder().encode(JSON.stringify(body))
        })
        expect(answer.status, `${path} ${JSON.stringify(headers["content-type"])}`).toBe(415)
        const error = (await answer.json()) as { statusCode: number; message: string; error: string }
        expect(error).toMatchObject({ statusCode: 415, error: "Unsupported Media Type" })
        expect(error.message).toMatch(shown)
        expect(error.message).toMatch(/application\/json/)
      }
    }
    expect((await call(`${server.url}/sessions`, { headers: alice.headers })).body.sessions).toEqual([])
  })

  it("JSON media types with parameters or a +json suffix are read; an empty body needs no type", async () => {
    const alice = await user(server.app.oracleDid)
    const { "content-type": _json, ...noType } = alice.headers
    for (const type of ["application/json; charset=utf-8", "Application/JSON", "application/vnd.api+json"]) {
      const answer = await call(`${server.url}/sessions`, {
        method: "POST",
        headers: { ...noType, "content-type": type },
        body: { title: type }
      })
      expect(answer.status, type).toBe(201)
      expect(answer.body.title).toBe(type)
    }
    const bare = await call(`${server.url}/sessions`, { method: "POST", headers: noType })
    expect(bare.status).toBe(201)
  })
})

/** Sends raw bytes on a fresh socket and resolves with everything the server wrote before closing. */
const rawExchange = (url: string, bytes: string) =>
  new Promise<string>((resolve, reject) => {
    const { hostname, port } = new URL(url)
    const socket = connect(Number(port), hostname, () => socket.write(bytes))
    let answer = ""
    socket.on("data", (chunk) => {
      answer += chunk.toString("utf8")
    })
    socket.on("error", reject)
    socket.on("close", () => resolve(answer))
  })

describe("a slow body does not hold the socket (issue 36, item 9)", () => {
  it("a body shorter than its Content-Length is a JSON 408 once REQUEST_TIMEOUT_MS has passed, and the socket closes", async () => {
    const alice = await user(server.app.oracleDid)
    const head = [
      "POST /sessions HTTP/1.1",
      "Host: 127.0.0.1",
      `Authorization: ${alice.headers.authorization}`,
      "X-Auth-Type: ucan",
      "Content-Type: application/json",
      "Content-Length: 100",
      "",
      ""
    ].join("\r\n")
    // The socket's close is what the test waits for: the server ends it after the answer.
    const answer = await rawExchange(server.url, `${head}{"title":`)
    expect(answer).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/)
    const body = JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)) as {
      statusCode: number
      message: string
    }
    expect(body.statusCode).toBe(408)
    expect(body.message).toMatch(/within 400 ms \(REQUEST_TIMEOUT_MS\)/)
    expect((await call(`${server.url}/sessions`, { headers: alice.headers })).body.sessions).toEqual([])
  })

  it("headers that never end are answered 408 too", async () => {
    const answer = await rawExchange(server.url, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    expect(answer).toMatch(/^HTTP\/1\.1 408 /)
  })

  it("a streamed answer is not cut by the bound: a turn still running after a slower request was cut ends `done`", async () => {
    // The turn's tool waits on a gate that opens only once a slow request, started after the
    // turn, has been answered 408: by then the turn's own request is older than the bound, and
    // the server's sweep has passed over its connection.
    const alice = await user(server.app.oracleDid)
    const response = await fetch(`${server.url}/messages/stream-long`, {
      method: "POST",
      headers: alice.headers,
      body: JSON.stringify({ message: "Run the gated job", stream: true })
    })
    expect(response.status).toBe(200)
    await gate.entered
    const probe = await rawExchange(server.url, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    expect(probe).toMatch(/^HTTP\/1\.1 408 /)
    gate.open()
    const text = await response.text()
    expect(text).toMatch(/"toolName":"run_gated_job","args":\{\},"status":"done"/)
    expect(text).toMatch(/event: done\ndata: \{[^\n]*"status":"finished"/)
  })
})
