/**
 * `plugboard inspect --mcp servers.json` and `serve --mcp servers.json`, run the way docs/mounting.md
 * shows them, in a folder outside the repository (issue 36, item 16). With no module given and an
 * MCP config named, the command mounts those servers alone; before the fix both failed with "No
 * module given, and the default … is not here", since the examples' catalog exists only in the
 * repository. The server is the real `@modelcontextprotocol/server-memory`.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { call, spawnServe } from "./helpers.js"
import { ROOT, runCli } from "./runCli.js"

const memoryEntry = join(
  dirname(createRequire(import.meta.url).resolve("@modelcontextprotocol/server-memory/package.json")),
  "dist",
  "index.js"
)

describe("an MCP config alone, outside the repository (issue 36, item 16)", () => {
  const cwd = mkdtempSync(join(tmpdir(), "plugboard-mcp-outside-"))
  writeFileSync(
    join(cwd, "servers.json"),
    JSON.stringify({
      mcpServers: {
        memory: {
          command: process.execPath,
          args: [memoryEntry],
          env: { MEMORY_FILE_PATH: join(cwd, "memory.json") }
        }
      }
    })
  )
  afterAll(() => rmSync(cwd, { recursive: true, force: true }))

  it("the folder is outside the repository", () => {
    expect(cwd.startsWith(ROOT)).toBe(false)
  })

  it("inspect --mcp servers.json reports the server's plugin and nothing of the examples' catalog", async () => {
    const run = await runCli(cwd, "inspect", "--mcp", "servers.json", "--json")
    expect(run.stderr).not.toMatch(/No module given/)
    expect(run.code).toBe(0)
    const report = JSON.parse(run.stdout) as { plugins: Array<{ name: string }> }
    expect(report.plugins.map((p) => p.name)).toEqual(["memory"])
  }, 60_000)

  it("serve --mcp servers.json boots and serves the server's plugin", async () => {
    const serve = spawnServe(
      [
        process.execPath,
        "--conditions=@plugboard/source",
        join(ROOT, "scripts/plugboard.mjs"),
        "serve",
        "--mcp",
        "servers.json"
      ],
      cwd,
      { PORT: "0", HOME: cwd }
    )
    try {
      const url = await serve.url
      const health = await call(`${url}/health`)
      expect(health.status).toBe(200)
      expect(serve.output()).not.toMatch(/No module given/)
      // The boot report: the one server, mounted, and nothing else.
      expect(serve.output()).toMatch(/plugins +1 \(1 MCP server\)/)
    } finally {
      serve.child.kill("SIGTERM")
      await serve.exited
    }
  }, 90_000)
})
