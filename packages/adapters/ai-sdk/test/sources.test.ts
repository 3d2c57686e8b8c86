/**
 * MCP servers and skills folders in an AI SDK turn: a real MCP server (`server-everything`, over
 * stdio) mounted with `@plugboard/mcp`, and the examples' skills read by `@plugboard/skills`,
 * become plugins by core's rules; a turn loads them and calls their tools through the same gate.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { createPlugboard, type Plugboard, type ToolEndEvent } from "@plugboard/ai-sdk"
import { Catalog } from "@plugboard/core"
import { type MountedMcpServers, mountMcpServers } from "@plugboard/mcp"
import { loadSkills, READ_FILE_TOOL } from "@plugboard/skills"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { play, scriptedModel, toolResultsSent } from "./fixtures.js"

const everythingBin = join(
  dirname(createRequire(import.meta.url).resolve("@modelcontextprotocol/server-everything/package.json")),
  "dist/index.js"
)
const skillsDir = join(import.meta.dirname, "../../../../examples/skills")

describe("MCP servers and skills behind an AI SDK turn", () => {
  let mcp: MountedMcpServers
  let board: Plugboard
  let cacheDir: string
  beforeAll(async () => {
    cacheDir = mkdtempSync(join(tmpdir(), "plugboard-ai-sdk-mcp-"))
    mcp = await mountMcpServers(
      { mcpServers: { everything: { command: process.execPath, args: [everythingBin, "stdio"] } } },
      { cacheDir }
    )
    expect(mcp.errors).toEqual([])
    board = await createPlugboard({ plugins: [], sources: [mcp, await loadSkills([skillsDir])] })
  }, 60_000)
  afterAll(async () => {
    await mcp?.close()
    rmSync(cacheDir, { recursive: true, force: true })
  })

  it("loads the MCP server's plugin and calls its tool over MCP", async () => {
    const ended: Array<ToolEndEvent> = []
    const { model, sent } = scriptedModel([
      { calls: [["load_capability", { names: ["everything"] }]] },
      { calls: [["echo", { message: "hello over MCP" }]] },
      { text: "echoed" }
    ])
    const turn = board.turn({ onToolEnd: (e) => ended.push(e) })
    await play(turn, model, "echo something")
    expect(sent[1]!.tools.map((t) => t.name)).toContain("echo")
    expect(toolResultsSent(sent[2]!).at(-1)).toMatchObject({ toolName: "echo", error: false })
    expect(toolResultsSent(sent[2]!).at(-1)!.text).toContain("hello over MCP")
    // The MCP tool's content blocks reach the app's callback.
    expect(ended.at(-1)?.output?.content[0]).toMatchObject({ type: "text" })
  })

  it("loads a skill: its guide comes back with the load, and its files are read through its tool", async () => {
    // Every skill has a read tool; two skills share its name, so core namespaces it per skill.
    const readTool = board.catalog.byName.get("release-notes")!.tools[0]!.name
    expect(readTool).toBe(`release-notes__${READ_FILE_TOOL}`)
    const { model, sent } = scriptedModel([
      { calls: [["load_capability", { names: ["release-notes"] }]] },
      { calls: [[readTool, { path: "SKILL.md" }]] },
      { text: "read" }
    ])
    const turn = board.turn({})
    await play(turn, model, "write release notes")
    const load = JSON.parse(toolResultsSent(sent[1]!)[0]!.text)
    expect(load.results[0]).toMatchObject({ name: "release-notes", status: "loaded" })
    expect(typeof load.results[0].operatingGuide).toBe("string")
    const read = toolResultsSent(sent[2]!).at(-1)!
    expect(read).toMatchObject({ toolName: readTool, error: false })
    expect(read.text).toContain("name: release-notes")
  })

  it("a source's errors stop the catalog with core's boot error, each line named", async () => {
    const bad = await mountMcpServers({ mcpServers: { broken: { command: 42 } } }, { cacheDir })
    const failure = await createPlugboard({ plugins: [], sources: [bad] }).catch((e: unknown) => e)
    expect(failure).toBeInstanceOf(Catalog.CatalogBootError)
    expect((failure as Catalog.CatalogBootError).lines[0]).toMatch(/^\[boot-error\] .*broken/)
  })
})
