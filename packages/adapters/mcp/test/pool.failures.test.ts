/**
 * The pool when servers fail: crashes, hangs, aborts, servers that cannot start or be reached,
 * idle close and reconnect, close(), tools/list_changed, and bad input. The failing servers are
 * small fixtures built with the official SDK's McpServer (`fixtures/`).
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ToolOutput } from "@plugboard/core"
import { afterAll, afterEach, describe, expect, it } from "vitest"
import { McpError, McpPool, type McpPoolOptions } from "../src/Pool.js"
import type { McpServerConfig, McpToolDescription } from "../src/Types.js"
import {
  alive,
  freePort,
  httpServer,
  pagedFixture,
  readLog,
  recordingLogger,
  startHttpFixture,
  stdioFixture,
  stdioServer,
  waitFor
} from "./fixtures/servers.js"

const dir = mkdtempSync(join(tmpdir(), "plugboard-mcp-failures-"))
let logs = 0
const pools: Array<McpPool> = []

/** A fresh pool (closed after the test) and a fixture server writing to its own log file. */
const setup = (options: McpPoolOptions = {}, timeoutMs = 10_000) => {
  const log = join(dir, `fixture-${++logs}.jsonl`)
  const pool = new McpPool(options)
  pools.push(pool)
  const server = stdioServer("failing", [stdioFixture], { env: { FIXTURE_LOG: log }, timeoutMs })
  return { pool, server, log }
}

const text = (output: ToolOutput.ToolOutput): string => ToolOutput.toText(output)
const pidOf = async (pool: McpPool, server: McpServerConfig, options = {}): Promise<number> =>
  Number(text(await pool.call(server, "whoami", {}, options)).replace("pid ", ""))

/** The rejection of `promise`, which must be an McpError. */
const failure = async (promise: Promise<unknown>): Promise<McpError> => {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e
  )
  expect(error).toBeInstanceOf(McpError)
  return error as McpError
}

afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe("a server that crashes mid-call", () => {
  it("fails the call as Crashed with the exit code and stderr, and the next call reconnects", async () => {
    const logger = recordingLogger()
    const { pool, server } = setup({ logger })
    const before = await pidOf(pool, server)
    const inFlight = failure(pool.call(server, "slow", { ms: 5_000 }))
    const error = await failure(pool.call(server, "crash", {}))
    expect(error.reason).toBe("crashed")
    expect(error.server).toBe("failing")
    expect(error.tool).toBe("crash")
    expect(error.message).toContain("MCP server 'failing'")
    expect(error.message).toContain("exited with code 3 during the call of tool 'crash'")
    expect(error.message).toContain("fixture: about to crash on purpose")
    // Every call in flight on the dead connection fails the same way, at once.
    const other = await inFlight
    expect(other.reason).toBe("crashed")
    expect(other.message).toContain("during the call of tool 'slow'")
    expect(alive(before)).toBe(false)
    expect(logger.lines.some((l) => l.level === "warn" && l.message.includes("exited with code 3"))).toBe(
      true
    )

    const after = await pidOf(pool, server)
    expect(after).not.toBe(before)
    expect(alive(after)).toBe(true)
  })
})

describe("a call that hangs", () => {
  it("times out after timeoutMs, and the server is sent notifications/cancelled", async () => {
    const { pool, server, log } = setup()
    await pidOf(pool, server)
    const started = Date.now()
    const error = await failure(pool.call(server, "hang", {}, { timeoutMs: 300 }))
    const elapsed = Date.now() - started
    expect(error.reason).toBe("timeout")
    expect(error.tool).toBe("hang")
    expect(error.message).toBe(
      "MCP server 'failing' did not answer the call of tool 'hang' within 300 ms; the request was cancelled (notifications/cancelled)."
    )
    expect(elapsed).toBeGreaterThanOrEqual(290)
    expect(elapsed).toBeLessThan(2_000)
    await waitFor(
      () => readLog(log).some((e) => e.event === "aborted"),
      5_000,
      "the server to see the cancellation"
    )
    const entries = readLog(log)
    const hang = entries.find((e) => e.event === "hang")!
    const cancelled = entries.find((e) => e.event === "cancelled")!
    expect(cancelled.params).toMatchObject({ requestId: hang.requestId })
    // The connection is still good.
    expect(await pidOf(pool, server)).toBe(hang.pid)
  })

  it("is cancelled by its abort signal, and the server is sent notifications/cancelled", async () => {
    const { pool, server, log } = setup()
    const pid = await pidOf(pool, server)
    const controller = new AbortController()
    setTimeout(() => controller.abort(new Error("the user stopped the turn")), 150)
    const error = await failure(pool.call(server, "hang", {}, { signal: controller.signal }))
    expect(error.reason).toBe("aborted")
    expect(error.message).toBe(
      "MCP server 'failing': the call of tool 'hang' was aborted; the server was sent notifications/cancelled."
    )
    await waitFor(() => readLog(log).some((e) => e.event === "cancelled"), 5_000, "notifications/cancelled")
    const cancelled = readLog(log).find((e) => e.event === "cancelled")!
    expect(cancelled.params).toMatchObject({ reason: "Error: the user stopped the turn" })
    expect(await pidOf(pool, server)).toBe(pid)
  })

  it("sends nothing when the signal is aborted before the call", async () => {
    const { pool, server, log } = setup()
    await pidOf(pool, server)
    const error = await failure(pool.call(server, "hang", {}, { signal: AbortSignal.abort() }))
    expect(error.reason).toBe("aborted")
    expect(error.message).toContain("was aborted before it was sent")
    // A call after it on the same connection: the server reads its stdin in order, so a `hang`
    // sent before would be in its log by the time this answers.
    await pidOf(pool, server)
    expect(readLog(log).some((e) => e.event === "hang")).toBe(false)
  })
})

describe("servers that cannot be started or reached", () => {
  it("a command that does not exist is Unreachable, with the reason", async () => {
    const pool = new McpPool()
    pools.push(pool)
    const server = stdioServer("missing", [], { command: "plugboard-no-such-command" })
    const error = await failure(pool.call(server, "anything", {}))
    expect(error.reason).toBe("unreachable")
    expect(error.message).toBe(
      "MCP server 'missing' could not be started: command 'plugboard-no-such-command' was not found (ENOENT)."
    )
    const described = await failure(pool.describe(server))
    expect(described.reason).toBe("unreachable")
  })

  it("a server that exits at start is Unreachable, with its exit code and stderr", async () => {
    const pool = new McpPool()
    pools.push(pool)
    const server = stdioServer("broken", [
      "-e",
      "console.error('fatal: MEMORY_API_KEY is not set'); process.exit(2)"
    ])
    const error = await failure(pool.describe(server))
    expect(error.reason).toBe("unreachable")
    expect(error.message).toContain("MCP server 'broken'")
    expect(error.message).toContain("exited with code 2 before it finished initializing")
    expect(error.message).toContain("fatal: MEMORY_API_KEY is not set")
  })

  it("a process that never answers initialize times out", async () => {
    const pool = new McpPool()
    pools.push(pool)
    const server = stdioServer("mute", ["-e", "setInterval(() => {}, 1000)"], { timeoutMs: 300 })
    const started = Date.now()
    const error = await failure(pool.describe(server))
    expect(error.reason).toBe("timeout")
    expect(error.message).toMatch(/^MCP server 'mute'.* within 300 ms/)
    expect(Date.now() - started).toBeLessThan(2_000)
  })

  it("describe against an HTTP URL where nothing listens is Unreachable", async () => {
    const pool = new McpPool()
    pools.push(pool)
    const url = `http://127.0.0.1:${await freePort()}/mcp`
    const error = await failure(pool.describe(httpServer("nowhere", url)))
    expect(error.reason).toBe("unreachable")
    expect(error.message).toContain(`MCP server 'nowhere' at ${url} could not be reached`)
    expect(error.message).toContain("ECONNREFUSED")
  })
})

describe("HTTP headers", () => {
  it("sends the server's headers merged with the use's, and refusals are clear", async () => {
    const fixture = await startHttpFixture()
    try {
      const pool = new McpPool()
      pools.push(pool)
      const refused = await failure(pool.describe(httpServer("guarded", fixture.url)))
      expect(refused.reason).toBe("unreachable")
      expect(refused.message).toContain("401")
      expect(refused.message).toContain("missing or wrong x-api-key")

      const server = httpServer("guarded", fixture.url, { headers: { "x-api-key": "fixture-key" } })
      const alice = { connectionKey: "alice", headers: { "x-user": "alice" } }
      expect(text(await pool.call(server, "whoami", {}, alice))).toBe("user alice")
      expect(
        text(await pool.call(server, "whoami", {}, { connectionKey: "bob", headers: { "x-user": "bob" } }))
      ).toBe("user bob")
      // A renewed header on the same connection replaces the old one.
      expect(
        text(
          await pool.call(server, "whoami", {}, { connectionKey: "alice", headers: { "x-user": "alice-2" } })
        )
      ).toBe("user alice-2")
      expect(text(await pool.call(server, "whoami", {}, { connectionKey: "alice" }))).toBe("user (none)")
      // Each connection's initialize carried its opener's headers.
      expect(fixture.output().match(/^initialize .*$/gm)).toEqual(["initialize alice", "initialize bob"])
    } finally {
      await fixture.stop()
    }
  })
})

describe("connections", () => {
  it("starts a stdio server with its args, env and cwd, and only a safe part of the host's environment", async () => {
    process.env.PLUGBOARD_TEST_HOST_SECRET = "must not leak"
    try {
      const pool = new McpPool({ clientInfo: { name: "plugboard-test", version: "9.9.9" } })
      pools.push(pool)
      const server: McpServerConfig = {
        name: "placed",
        transport: {
          kind: "stdio",
          command: process.execPath,
          args: [stdioFixture],
          env: { FIXTURE_TAG: "tagged" },
          cwd: dir
        },
        timeoutMs: 10_000
      }
      expect(JSON.parse(text(await pool.call(server, "where", {})))).toEqual({
        cwd: dir,
        tag: "tagged",
        hostSecret: null,
        client: { name: "plugboard-test", version: "9.9.9" }
      })
    } finally {
      delete process.env.PLUGBOARD_TEST_HOST_SECRET
    }
  })

  it("concurrent first uses share one connection; connection keys get their own", async () => {
    const { pool, server, log } = setup()
    const pids = await Promise.all(Array.from({ length: 5 }, () => pidOf(pool, server)))
    expect(new Set(pids).size).toBe(1)
    expect(readLog(log).filter((e) => e.event === "started")).toHaveLength(1)
    const alice = await pidOf(pool, server, { connectionKey: "alice" })
    expect(alice).not.toBe(pids[0])
    expect(await pidOf(pool, server, { connectionKey: "alice" })).toBe(alice)
  })

  it("closes an idle connection (its child ends) and reopens it on the next use", async () => {
    const logger = recordingLogger()
    const { pool, server } = setup({ idleMs: 150, logger })
    const first = await pidOf(pool, server)
    await waitFor(() => !alive(first), 5_000, "the idle child to end")
    // Closing an idle connection is no failure: nothing above debug is logged.
    expect(logger.lines.filter((l) => l.level !== "debug")).toEqual([])
    const second = await pidOf(pool, server)
    expect(second).not.toBe(first)
  })

  it("keeps a connection in use open past the idle period", async () => {
    const { pool, server } = setup({ idleMs: 100 })
    const pid = await pidOf(pool, server)
    expect(text(await pool.call(server, "slow", { ms: 400 }))).toBe("slept 400")
    expect(await pidOf(pool, server)).toBe(pid)
  })

  it("close() ends every child and cuts calls in flight; later calls are refused clearly", async () => {
    const { pool, server, log } = setup()
    const pid = await pidOf(pool, server)
    const inFlight = failure(pool.call(server, "hang", {}))
    await waitFor(() => readLog(log).some((e) => e.event === "hang"), 5_000, "the call to reach the server")
    await Promise.all([pool.close(), pool.close()])
    expect(alive(pid)).toBe(false)
    const cut = await inFlight
    expect(cut.reason).toBe("closed")
    expect(cut.message).toBe(
      "MCP server 'failing': the call of tool 'hang' was cut short: the connection was closed (the MCP pool was closed)."
    )
    const refused = await failure(pool.call(server, "whoami", {}))
    expect(refused.reason).toBe("closed")
    expect(refused.message).toBe(
      "The MCP pool is closed: the call of tool 'whoami' of MCP server 'failing' was not made."
    )
    expect((await failure(pool.describe(server))).reason).toBe("closed")
    await pool.close()
  })

  it("a server whose config changed gets a new connection", async () => {
    const { pool, server } = setup()
    const pid = await pidOf(pool, server)
    const changed = {
      ...server,
      transport: { ...server.transport, env: { FIXTURE_LOG: join(dir, "changed.jsonl") } }
    }
    const other = await pidOf(pool, changed as McpServerConfig)
    expect(other).not.toBe(pid)
    await waitFor(() => !alive(pid), 5_000, "the old child to end")
  })
})

describe("tools/list_changed", () => {
  it("refreshes currentTools and tells the listeners", async () => {
    const { pool, server } = setup()
    expect(pool.currentTools("failing")).toBeUndefined()
    const heard: Array<{ server: string; tools: ReadonlyArray<string> }> = []
    const stop = pool.onToolsChanged((name, tools) =>
      heard.push({ server: name, tools: tools.map((t) => t.name) })
    )
    const silenced: Array<ReadonlyArray<McpToolDescription>> = []
    pool.onToolsChanged((_name, tools) => silenced.push(tools))()
    pool.onToolsChanged(() => {
      throw new Error("a listener's bug")
    })

    const described = await pool.describe(server)
    expect(described.tools.map((t) => t.name)).not.toContain("added_tool")
    expect(pool.currentTools("failing")).toEqual(described.tools)
    expect(heard).toEqual([])

    expect(text(await pool.call(server, "add_tool", {}))).toBe("ok")
    await waitFor(() => heard.length > 0, 5_000, "the tools/list_changed refresh")
    expect(heard[0]?.server).toBe("failing")
    expect(heard[0]?.tools.at(-1)).toBe("added_tool")
    expect(pool.currentTools("failing")?.map((t) => t.name)).toContain("added_tool")
    expect(silenced).toEqual([])
    expect(text(await pool.call(server, "added_tool", {}))).toBe("added")
    stop()
  })
})

describe("toolsSettled", () => {
  it("is undefined with no relisting under way, and settles once the announced change is read", async () => {
    const { pool, server } = setup()
    expect(pool.toolsSettled(5_000)).toBeUndefined()
    await pool.describe(server)
    expect(pool.toolsSettled(5_000)).toBeUndefined()
    // The server announces its new tool before it answers the call, so when the call returns the
    // relisting has begun and the list in hand is still the old one.
    expect(text(await pool.call(server, "add_tool", {}))).toBe("ok")
    const settling = pool.toolsSettled(5_000)
    expect(settling).toBeInstanceOf(Promise)
    await settling
    expect(pool.currentTools("failing")?.map((t) => t.name)).toContain("added_tool")
    expect(pool.toolsSettled(5_000)).toBeUndefined()
  })
})

describe("tools/list", () => {
  const paged = (mode: string) =>
    stdioServer(`paged-${mode}`, [pagedFixture], { env: { FIXTURE_MODE: mode } })

  it("reads every page, and leaves out (with a warning) a tool it cannot offer", async () => {
    const logger = recordingLogger()
    const pool = new McpPool({ logger })
    pools.push(pool)
    const description = await pool.describe(paged("paged"))
    expect(description.serverInfo).toEqual({ name: "paged-fixture", version: "1.0.0" })
    expect(description.tools).toEqual([
      { name: "first", inputSchema: { type: "object", properties: {} } },
      {
        name: "second",
        title: "Second",
        description: "two",
        inputSchema: { type: "object", properties: {} }
      },
      { name: "third", inputSchema: { type: "object", properties: {} } }
    ])
    expect(logger.lines.filter((l) => l.level === "warn").map((l) => l.message)).toEqual([
      "MCP server 'paged-paged' lists a tool without a name; it is left out.",
      "MCP server 'paged-paged' lists tool 'no_schema' without an inputSchema object; it is left out.",
      "MCP server 'paged-paged' lists tool 'first' twice; the first is kept."
    ])
  })

  it("refuses pages that loop", async () => {
    const pool = new McpPool()
    pools.push(pool)
    const error = await failure(pool.describe(paged("loop")))
    expect(error.reason).toBe("protocol")
    expect(error.message).toBe(
      "MCP server 'paged-loop' answered tools/list with a cursor it already gave (same): its pages loop."
    )
  })

  it("takes a server without tools/list as a server without tools", async () => {
    const pool = new McpPool()
    pools.push(pool)
    const description = await pool.describe(paged("none"))
    expect(description.tools).toEqual([])
    expect(pool.currentTools("paged-none")).toEqual([])
  })
})

describe("answers", () => {
  it("maps audio and resource links end to end", async () => {
    const { pool, server } = setup()
    const output = await pool.call(server, "media", {})
    expect(output.content).toEqual([
      { type: "audio", mimeType: "audio/wav", data: "UklGRiQAAABXQVZF" },
      { type: "resource_link", uri: "file:///notes.txt", name: "notes", description: "the notes" }
    ])
  })

  it("a server's JSON-RPC error is Protocol, its words bounded", async () => {
    const { pool, server } = setup()
    const error = await failure(pool.call(server, "bad_result", {}))
    expect(error.reason).toBe("protocol")
    expect(error.message).toContain(
      "MCP server 'failing' answered the call of tool 'bad_result' with an error"
    )
    expect(error.message).toContain("Invalid tools/call result")
    expect(error.message.length).toBeLessThan(1_200)
  })
})

describe("bad input", () => {
  it("is refused with a clear error before anything starts", async () => {
    const { pool, server, log } = setup()
    await expect(pool.call(server, "whoami", [] as never)).rejects.toThrow(
      "The arguments of tool 'whoami' of MCP server 'failing' must be an object, got an array."
    )
    await expect(pool.call(server, "", {})).rejects.toThrow("needs a tool name")
    await expect(pool.call(server, "whoami", {}, { timeoutMs: 0 })).rejects.toThrow(
      "timeoutMs must be a positive number of milliseconds, got 0."
    )
    await expect(pool.describe({ name: "x" } as McpServerConfig)).rejects.toThrow(
      "MCP server 'x' has no transport of kind 'stdio' or 'http'."
    )
    await expect(pool.describe(httpServer("bad-url", "not a url"))).rejects.toThrow(
      "MCP server 'bad-url' has no valid url (got not a url)."
    )
    expect(() => new McpPool({ idleMs: -1 })).toThrow("idleMs must be a positive number")
    expect(readLog(log)).toEqual([])
  })
})
