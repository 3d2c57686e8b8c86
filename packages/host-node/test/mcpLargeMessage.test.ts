/**
 * Issue 36, item 5 (its last point): an MCP answer over the stdio message limit failed as
 * "exited with code 0 during the call", which blamed the server for what the client did (the
 * SDK's read buffer overflowed and it closed the server's stdin). Now answers up to 32 MiB are
 * read (`Results.ts` keeps 16,000,000 characters of text; a door then pages it), and a larger one
 * fails naming the limit. The server is real: the SDK's, `fixtures/mcp/hostile-server.mjs`.
 */
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { ToolOutput } from "@plugboard/core"
import { McpPool, type McpServerConfig } from "@plugboard/mcp"
import { afterAll, describe, expect, it } from "vitest"

const here = dirname(fileURLToPath(import.meta.url))
const hostile: McpServerConfig = {
  name: "hostile",
  transport: {
    kind: "stdio",
    command: process.execPath,
    args: [join(here, "fixtures", "mcp", "hostile-server.mjs")],
    env: {}
  },
  timeoutMs: 60_000
}

describe("an MCP answer over the message limit (issue 36, item 5)", () => {
  const pool = new McpPool({})
  afterAll(() => pool.close())

  it("issue 36 item 5: a 12 MB answer (over the SDK's 10 MiB default) is read whole", async () => {
    const output = await pool.call(hostile, "dump", { megabytes: 12 })
    expect(output.isError).toBe(false)
    expect(ToolOutput.toText(output)).toHaveLength(12 * 1024 * 1024)
  }, 60_000)

  it("issue 36 item 5: a 36 MB answer fails naming the 32 MiB limit, not 'exited with code 0'; the next call reconnects", async () => {
    const failed = await pool.call(hostile, "dump", { megabytes: 36 }).then(
      () => undefined,
      (error: unknown) => error
    )
    expect(String((failed as Error)?.message)).toMatch(
      /sent a message over plugboard's limit of 32 MiB, so the connection was closed \(it reopens on the next call\) during the call of tool 'dump'/
    )
    expect(String((failed as Error)?.message)).not.toMatch(/exited with code/)
    const again = await pool.call(hostile, "dump", { megabytes: 0.001 })
    expect(ToolOutput.toText(again)).toMatch(/^audit line 0000000/)
  }, 90_000)
})
