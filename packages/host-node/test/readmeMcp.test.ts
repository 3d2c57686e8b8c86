/** The MCP config README.md offers to copy is one the server accepts, without a warning. */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { McpConfig } from "@plugboard/mcp"
import { describe, expect, it } from "vitest"

const README = readFileSync(join(import.meta.dirname, "..", "..", "..", "README.md"), "utf8")

describe("README: Mounting MCP servers and skills", () => {
  it("its config parses with no error and no warning", () => {
    const section = README.slice(README.indexOf("## Mounting MCP servers and skills"))
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
