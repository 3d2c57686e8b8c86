/**
 * The OAuth configs the docs offer to copy parse: README's "Connecting accounts" and
 * docs/oauth.md's "The config a user copies" are accepted with no error and no warning, and give
 * the OAuth servers they describe (the secret read from the variable the config names).
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { McpConfig, oauthServers } from "@plugboard/mcp"
import { describe, expect, it } from "vitest"

const ROOT = join(import.meta.dirname, "..", "..", "..", "..")
const blockAfter = (file: string, heading: string): unknown => {
  const text = readFileSync(join(ROOT, file), "utf8")
  const at = text.indexOf(heading)
  expect(at).toBeGreaterThanOrEqual(0)
  const block = /```json\n([\s\S]*?)```/.exec(text.slice(at))?.[1]
  expect(block).toBeDefined()
  return JSON.parse(block!)
}

describe("the OAuth configs of the docs", () => {
  it("README: Connecting accounts", () => {
    const parsed = McpConfig.parse(blockAfter("README.md", "## Connecting accounts"))
    expect([parsed.errors, parsed.warnings]).toEqual([[], []])
    expect(oauthServers(parsed.servers, {})).toEqual({
      errors: [],
      servers: [{ name: "linear", url: "https://mcp.linear.app/mcp" }]
    })
  })

  it("docs/oauth.md: The config a user copies", () => {
    const parsed = McpConfig.parse(blockAfter("docs/oauth.md", "## The config a user copies"))
    expect([parsed.errors, parsed.warnings]).toEqual([[], []])
    expect(oauthServers(parsed.servers, { ACME_OAUTH_SECRET: "from-env" }).servers).toEqual([
      { name: "linear", url: "https://mcp.linear.app/mcp" },
      {
        name: "acme",
        url: "https://mcp.acme.example/mcp",
        scopes: ["tools:read"],
        clientId: "plugboard",
        clientSecret: "from-env"
      }
    ])
  })
})
