/**
 * The MCP configs the docs offer to copy are ones that parse: docs/mounting.md's servers.json is
 * accepted by the server without a warning, and README's client config (Claude Desktop, Cursor) is
 * the `mcpServers` shape, naming `plugboard mcp`.
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { McpConfig } from "@plugboard/mcp"
import { describe, expect, it } from "vitest"

const ROOT = join(import.meta.dirname, "..", "..", "..")
const README = readFileSync(join(ROOT, "README.md"), "utf8")
const MOUNTING = readFileSync(join(ROOT, "docs", "mounting.md"), "utf8")

describe("docs/mounting.md: Mounting MCP servers and skills", () => {
  it("its config parses with no error and no warning", () => {
    const section = MOUNTING
    const block = /```jsonc\n([\s\S]*?)```/.exec(section)?.[1]
    expect(block).toBeDefined()
    const json = block!
      .split("\n")
      .filter((line) => !line.trim().startsWith("//"))
      .join("\n")
    const parsed = McpConfig.parse(JSON.parse(json))
    expect(parsed.errors).toEqual([])
    expect(parsed.warnings).toEqual([])
    expect(parsed.servers.map((s) => [s.name, s.transport.kind, s.forwardUcan !== undefined])).toEqual([
      ["memory", "stdio", false],
      ["crm", "http", true]
    ])
  })
})

describe("README: Use it from your agent", () => {
  it("its MCP client config is an `mcpServers` entry that runs `plugboard mcp`", () => {
    const section = README.slice(README.indexOf("## Use it from your agent"))
    const block = /```json\n([\s\S]*?)```/.exec(section)?.[1]
    expect(block).toBeDefined()
    const parsed = McpConfig.parse(JSON.parse(block!))
    expect(parsed.errors).toEqual([])
    expect(parsed.servers.map((s) => s.name)).toEqual(["plugboard"])
    expect(JSON.parse(block!).mcpServers.plugboard.args.slice(0, 2)).toEqual(["plugboard", "mcp"])
  })
})
