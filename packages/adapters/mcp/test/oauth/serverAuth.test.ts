/**
 * A server's `auth` key in the MCP config file: `"oauth"` or an object (scopes, a preregistered
 * clientId, the variable holding its secret); every misuse is an error naming its key path, and
 * `oauthServers` turns the checked servers into the connections' server list, reading secrets
 * from the environment.
 */
import { describe, expect, it } from "vitest"
import * as Config from "../../src/Config.js"
import { oauthServers } from "../../src/oauth/ServerAuth.js"

const one = (server: Record<string, unknown>) => Config.parse({ mcpServers: { s: server } })

describe("the auth key", () => {
  it('"oauth" and the object form are read onto the server', () => {
    expect(one({ url: "https://mcp.example/mcp", auth: "oauth" })).toMatchObject({
      errors: [],
      warnings: [],
      servers: [{ name: "s", oauth: {} }]
    })
    const full = one({
      url: "https://mcp.example/mcp",
      auth: {
        type: "oauth",
        scopes: ["tools:read", "offline_access"],
        clientId: "pb",
        clientSecretEnv: "S_SECRET"
      }
    })
    expect(full.errors).toEqual([])
    expect(full.servers[0]?.oauth).toEqual({
      scopes: ["tools:read", "offline_access"],
      clientId: "pb",
      clientSecretEnv: "S_SECRET"
    })
    expect(one({ url: "https://mcp.example/mcp" }).servers[0]?.oauth).toBeUndefined()
  })

  it("refuses every misuse, each with its key path, and leaves the server out", () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [
        { url: "https://x/mcp", auth: "basic" },
        'mcpServers.s.auth must be "oauth" or an object with "type": "oauth" (scopes, clientId, clientSecretEnv).'
      ],
      [
        { command: "node", auth: "oauth" },
        "mcpServers.s.auth is only for HTTP servers ('url'): a stdio server has no users to sign in."
      ],
      [
        { url: "https://x/mcp", auth: "oauth", forwardUcan: true },
        "mcpServers.s.auth and mcpServers.s.forwardUcan both send each user's credential in Authorization; keep one of them."
      ],
      [
        { url: "https://x/mcp", auth: "oauth", headers: { Authorization: "Bearer static" } },
        "mcpServers.s.auth sends each user's token in Authorization, which mcpServers.s.headers.Authorization also sets; drop one of them."
      ],
      [
        { url: "https://x/mcp", auth: { type: "oauth", scopes: "tools" } },
        "mcpServers.s.auth.scopes must be a list of scope names (no spaces)."
      ],
      [
        { url: "https://x/mcp", auth: { type: "oauth", scopes: ["a b"] } },
        "mcpServers.s.auth.scopes must be a list of scope names (no spaces)."
      ],
      [
        { url: "https://x/mcp", auth: { type: "oauth", clientId: "" } },
        "mcpServers.s.auth.clientId must be a non-empty string."
      ],
      [
        { url: "https://x/mcp", auth: { type: "oauth", clientSecretEnv: "S" } },
        "mcpServers.s.auth.clientSecretEnv is the secret of a preregistered client: set mcpServers.s.auth.clientId too."
      ],
      [
        { url: "https://x/mcp", auth: { type: "oauth", clientId: "pb", clientSecretEnv: "not a name" } },
        "mcpServers.s.auth.clientSecretEnv must be the name of an environment variable."
      ]
    ]
    for (const [server, message] of cases) {
      const parsed = one(server)
      expect(parsed.errors).toContain(message)
      expect(parsed.servers).toEqual([])
    }
  })

  it("warns about an unknown key of the object, and no longer about auth itself", () => {
    const parsed = one({ url: "https://x/mcp", auth: { type: "oauth", clientSecret: "oops" } })
    expect(parsed.errors).toEqual([])
    expect(parsed.warnings).toEqual([
      "mcpServers.s.auth.clientSecret is not a known key and is ignored (known: type, scopes, clientId, clientSecretEnv)."
    ])
  })
})

describe("oauthServers", () => {
  const parsed = Config.parse({
    mcpServers: {
      linear: { url: "https://mcp.linear.example/mcp", auth: "oauth" },
      acme: {
        url: "https://acme.example/mcp",
        auth: { type: "oauth", clientId: "pb", clientSecretEnv: "ACME_SECRET", scopes: ["r"] }
      },
      plain: { url: "https://plain.example/mcp" }
    }
  })

  it("lists the OAuth servers with their secrets read from the environment", () => {
    expect(oauthServers(parsed.servers, { ACME_SECRET: "s3cret" })).toEqual({
      errors: [],
      servers: [
        { name: "linear", url: "https://mcp.linear.example/mcp" },
        {
          name: "acme",
          url: "https://acme.example/mcp",
          scopes: ["r"],
          clientId: "pb",
          clientSecret: "s3cret"
        }
      ]
    })
  })

  it("names a secret variable that is unset, and leaves that server out", () => {
    expect(oauthServers(parsed.servers, {})).toEqual({
      errors: ["MCP server 'acme' reads its OAuth client secret from ACME_SECRET, which is not set."],
      servers: [{ name: "linear", url: "https://mcp.linear.example/mcp" }]
    })
  })
})
