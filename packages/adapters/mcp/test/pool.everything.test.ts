/**
 * The pool against real MCP servers installed from npm: the reference "everything" server over
 * stdio and over its Streamable HTTP mode, and the memory server over stdio.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ToolOutput } from "@plugboard/core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { McpError, McpPool } from "../src/Pool.js"
import type { McpProgress, McpServerConfig } from "../src/Types.js"
import {
  everythingEntry,
  httpServer,
  memoryEntry,
  type Started,
  startEverythingHttp,
  stdioServer
} from "./fixtures/servers.js"

// The first bytes of the logo server-everything's get-tiny-image returns (a PNG).
const PNG_MAGIC = "iVBORw0KGgo"

const text = (output: ToolOutput.ToolOutput): string => ToolOutput.toText(output)

/** The checks every transport of server-everything must pass. */
const everythingSuite = (pool: () => McpPool, server: () => McpServerConfig) => {
  it("describes the server: its initialize answer and every tool", async () => {
    const description = await pool().describe(server())
    expect(description.serverInfo).toMatchObject({
      name: "mcp-servers/everything",
      title: "Everything Reference Server"
    })
    expect(description.instructions).toContain("Everything Server")
    const names = description.tools.map((t) => t.name)
    for (const name of [
      "echo",
      "get-tiny-image",
      "get-resource-reference",
      "trigger-long-running-operation"
    ]) {
      expect(names).toContain(name)
    }
    const echo = description.tools.find((t) => t.name === "echo")!
    expect(echo.description).toBe("Echoes back the input string")
    expect(echo.inputSchema).toMatchObject({ type: "object", properties: { message: { type: "string" } } })
    expect(
      pool()
        .currentTools(server().name)
        ?.map((t) => t.name)
    ).toEqual(names)
  })

  it("calls echo: a text answer", async () => {
    const output = await pool().call(server(), "echo", { message: "hello plugboard" })
    expect(output).toEqual(ToolOutput.make({ content: [{ type: "text", text: "Echo: hello plugboard" }] }))
  })

  it("calls get-tiny-image: an image block", async () => {
    const output = await pool().call(server(), "get-tiny-image", {})
    const image = output.content.find((b) => b.type === "image")
    expect(image).toMatchObject({ type: "image", mimeType: "image/png" })
    expect(image?.type === "image" && image.data.startsWith(PNG_MAGIC)).toBe(true)
    expect(output.content[0]).toEqual({ type: "text", text: "Here's the image you requested:" })
  })

  it("calls get-resource-reference: an embedded resource", async () => {
    const output = await pool().call(server(), "get-resource-reference", {
      resourceType: "Text",
      resourceId: 2
    })
    const resource = output.content.find((b) => b.type === "resource")
    expect(resource).toMatchObject({
      type: "resource",
      uri: "demo://resource/dynamic/text/2",
      mimeType: "text/plain",
      text: expect.stringContaining("Resource 2: This is a plaintext resource")
    })
  })

  it("calls get-structured-content: structured content beside the text", async () => {
    const output = await pool().call(server(), "get-structured-content", { location: "Chicago" })
    expect(output.structured).toEqual({
      temperature: expect.any(Number),
      conditions: expect.any(String),
      humidity: expect.any(Number)
    })
    expect(output.isError).toBe(false)
  })

  it("calls get-resource-links: resource_link blocks, each read as text naming the link", async () => {
    const output = await pool().call(server(), "get-resource-links", { count: 2 })
    expect(text(output)).toContain('[resource link "Blob Resource 1": demo://resource/dynamic/blob/1')
    expect(text(output)).toContain(
      '[resource link "Text Resource 2": demo://resource/dynamic/text/2 (text/plain)]'
    )
  })

  it("gives a tool's own failure as an error answer, not a throw", async () => {
    const output = await pool().call(server(), "get-resource-reference", {
      resourceType: "Text",
      resourceId: 0
    })
    expect(output.isError).toBe(true)
    expect(text(output)).toBe("Invalid resourceId: 0. Must be a finite positive integer.")
    const unknown = await pool().call(server(), "no-such-tool", {})
    expect(unknown.isError).toBe(true)
    expect(text(unknown)).toContain("Tool no-such-tool not found")
  })

  it("passes progress notifications of a long-running operation", async () => {
    const seen: Array<McpProgress> = []
    const output = await pool().call(
      server(),
      "trigger-long-running-operation",
      { duration: 0.3, steps: 3 },
      { onProgress: (p) => seen.push(p) }
    )
    expect(text(output)).toContain("Long running operation completed")
    expect(seen).toEqual([
      { progress: 1, total: 3 },
      { progress: 2, total: 3 },
      { progress: 3, total: 3 }
    ])
    // A progress listener that throws costs the call nothing.
    const again = await pool().call(
      server(),
      "trigger-long-running-operation",
      { duration: 0.1, steps: 2 },
      {
        onProgress: () => {
          throw new Error("listener bug")
        }
      }
    )
    expect(text(again)).toContain("Long running operation completed")
  })
}

describe("server-everything over stdio", () => {
  const pool = new McpPool()
  const server = stdioServer("everything", [everythingEntry(), "stdio"])
  afterAll(() => pool.close())
  everythingSuite(
    () => pool,
    () => server
  )
})

describe("server-everything over Streamable HTTP", () => {
  const pool = new McpPool()
  let started: Started & { url: string; port: number }
  let server: McpServerConfig
  beforeAll(async () => {
    started = await startEverythingHttp()
    server = httpServer("everything-http", started.url)
  })
  afterAll(async () => {
    await pool.close()
    await started?.stop()
  })
  everythingSuite(
    () => pool,
    () => server
  )

  it("opens a new session when the server restarted (it no longer knows the old one)", async () => {
    expect(text(await pool.call(server, "echo", { message: "before" }))).toBe("Echo: before")
    await started.stop()
    started = await startEverythingHttp(started.port)
    expect(text(await pool.call(server, "echo", { message: "after" }))).toBe("Echo: after")
  })

  it("says a server that went away is unreachable, and reconnects once it is back", async () => {
    expect(text(await pool.call(server, "echo", { message: "up" }))).toBe("Echo: up")
    await started.stop()
    const error = await pool.call(server, "echo", { message: "down" }).then(
      () => undefined,
      (e: unknown) => e
    )
    expect(error).toBeInstanceOf(McpError)
    expect((error as McpError).reason).toBe("unreachable")
    expect((error as McpError).message).toContain("ECONNREFUSED")
    started = await startEverythingHttp(started.port)
    expect(text(await pool.call(server, "echo", { message: "back" }))).toBe("Echo: back")
  })
})

describe("server-memory over stdio", () => {
  const dir = mkdtempSync(join(tmpdir(), "plugboard-mcp-memory-"))
  const server = stdioServer("memory", [memoryEntry()], {
    env: { MEMORY_FILE_PATH: join(dir, "memory.jsonl") }
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it("creates entities and reads them back, across connections", async () => {
    const pool = new McpPool()
    try {
      const created = await pool.call(server, "create_entities", {
        entities: [
          { name: "plugboard", entityType: "project", observations: ["mounts MCP servers as plugins"] },
          { name: "Ada", entityType: "person", observations: ["maintains plugboard"] }
        ]
      })
      expect(created.isError).toBe(false)
      expect(created.structured).toEqual({
        entities: [
          { name: "plugboard", entityType: "project", observations: ["mounts MCP servers as plugins"] },
          { name: "Ada", entityType: "person", observations: ["maintains plugboard"] }
        ]
      })
      const found = await pool.call(server, "open_nodes", { names: ["Ada"] })
      expect(found.structured).toMatchObject({
        entities: [{ name: "Ada", observations: ["maintains plugboard"] }]
      })
    } finally {
      await pool.close()
    }
    // A new pool starts a new process; the graph is in the file.
    const later = new McpPool()
    try {
      const graph = await later.call(server, "read_graph", {})
      const names = (graph.structured as { entities: Array<{ name: string }> }).entities.map((e) => e.name)
      expect(names.sort()).toEqual(["Ada", "plugboard"])
      expect(text(graph)).toContain("mounts MCP servers as plugins")
    } finally {
      await later.close()
    }
  })
})
