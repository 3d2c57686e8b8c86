/**
 * The OAuth flow where something says no or is missing, through the same real components as
 * connect.browser.test.ts (oidc-provider, the SDK's MCP server with bearer auth, Chromium): each
 * case gets a clear `OAuthError` with a reason the host can act on, and loses nothing else.
 *
 * - A user cancels the consent: `refused`, and the flow is spent.
 * - A flow completed after it expired: `refused`.
 * - An authorization server without dynamic registration: `invalid`, naming the fix (a
 *   preregistered client); with that client in the config (confidential, client_secret_basic)
 *   the user connects, calls and disconnects with revocation.
 * - A server whose metadata names another resource: `invalid`, and no token is asked for it.
 * - An unreachable MCP server: `unreachable`.
 * - The authorization server down at refresh time: a token still valid is used; an expired one
 *   is `unreachable` and the connection is kept for later (not `needs-connect`).
 */
import { randomBytes } from "node:crypto"
import { ConnectionStore, TokenVault } from "@plugboard/core"
import {
  ConnectionsCipher,
  McpConfig,
  McpPool,
  OAuthConnections,
  type OAuthError,
  userConnectionKey
} from "@plugboard/mcp"
import { Effect, Either } from "effect"
import type { Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { chromiumMissing, launch } from "../console/browser.js"
import { type AuthServer, startAuthServer } from "./fixtures/authServer.js"
import { type Callback, signIn, startCallback } from "./fixtures/browserFlow.js"
import { type ProtectedMcpServer, startMcpServer } from "./fixtures/mcpServer.js"

const missing = chromiumMissing()
const ALICE = "did:key:z6MkAlice"
const closers: Array<() => Promise<void>> = []
let browser: Browser
let pool: McpPool

const run = <A>(effect: Effect.Effect<A, OAuthError>) => Effect.runPromise(effect)
const failure = async (effect: Effect.Effect<unknown, OAuthError>): Promise<OAuthError> => {
  const result = await Effect.runPromise(Effect.either(effect))
  if (Either.isRight(result)) throw new Error("expected an OAuthError")
  return result.left
}

/** One MCP server, its authorization server, the callback and the connections, started. */
interface Setup {
  readonly mcp: ProtectedMcpServer
  readonly auth: AuthServer
  readonly callback: Callback
  readonly vault: TokenVault.TokenVaultService
  readonly connections: OAuthConnections.Connections
  readonly clock: { offsetMs: number }
}

const setUp = async (
  server: Partial<OAuthConnections.OAuthServerConfig> = {},
  authOptions: (callbackUrl: string) => Parameters<typeof startAuthServer>[1] = () => ({}),
  mcpOptions: Parameters<typeof startMcpServer>[0] = {}
): Promise<Setup> => {
  let connections: OAuthConnections.Connections | undefined
  const callback = await startCallback(() => connections!)
  closers.push(callback.close)
  const mcp = await startMcpServer(mcpOptions)
  closers.push(mcp.close)
  const auth = await startAuthServer(() => mcp.url, authOptions(callback.url))
  closers.push(auth.close)
  await mcp.serve(auth.issuer)
  const cipher = ConnectionsCipher.make(new Uint8Array(randomBytes(32)))
  const vault = TokenVault.make(ConnectionStore.makeMemory(), cipher)
  const clock = { offsetMs: 0 }
  connections = OAuthConnections.make({
    vault,
    cipher,
    redirectUri: callback.url,
    servers: [{ name: "notes", url: mcp.url, ...server }],
    now: () => Date.now() + clock.offsetMs
  })
  return { mcp, auth, callback, vault, connections, clock }
}

const whoami = async (setup: Setup, user: string): Promise<string> => {
  const parsed = McpConfig.parse({ mcpServers: { notes: { url: setup.mcp.url } } })
  const headers = await run(setup.connections.headers(user, "notes"))
  return JSON.stringify(
    await pool.call(
      parsed.servers[0]!,
      "whoami",
      {},
      { headers, connectionKey: userConnectionKey("notes", user) }
    )
  )
}

beforeAll(async () => {
  if (missing !== undefined) return
  browser = await launch()
  pool = new McpPool()
}, 120_000)

afterAll(async () => {
  if (missing !== undefined) return
  await pool?.close()
  await browser?.close()
  for (const close of closers.reverse()) await close()
})

describe.skipIf(missing !== undefined)("OAuth flow failures (oidc-provider, SDK server, Chromium)", () => {
  it("a cancelled consent is refused with the server's answer, and the flow is spent", async () => {
    const setup = await setUp()
    const { url } = await run(setup.connections.start(ALICE, "notes"))
    const shown = await signIn(browser, url, setup.callback.url, "alice", "cancel")
    expect(shown).toBe(
      "refused: the authorization server of 'notes' answered access_denied: End-User aborted interaction"
    )
    const state = new URL(url).searchParams.get("state") ?? ""
    const again = await failure(setup.connections.complete({ state, code: "x" }))
    expect(again.message).toContain("already used or replaced")
    expect((await failure(setup.connections.accessToken(ALICE, "notes"))).reason).toBe("needs-connect")
  })

  it("a flow completed after it expired is refused", async () => {
    const setup = await setUp()
    const { url } = await run(setup.connections.start(ALICE, "notes"))
    setup.clock.offsetMs = 11 * 60_000
    const error = await failure(
      setup.connections.complete({ state: new URL(url).searchParams.get("state") ?? "", code: "x" })
    )
    expect([error.reason, error.message]).toEqual([
      "refused",
      "this sign-in to 'notes' took too long and expired; start connecting again"
    ])
  })

  it("without dynamic registration, says to preregister; with a preregistered client, connects and revokes", async () => {
    const clients = (callbackUrl: string) => ({
      registration: false,
      clients: [
        {
          client_id: "plugboard-preregistered",
          client_secret: "preregistered-secret-0123456789",
          redirect_uris: [callbackUrl],
          grant_types: ["authorization_code", "refresh_token"],
          response_types: ["code"],
          token_endpoint_auth_method: "client_secret_basic"
        }
      ]
    })
    const bare = await setUp({}, clients)
    const refused = await failure(bare.connections.start(ALICE, "notes"))
    expect(refused.reason).toBe("invalid")
    expect(refused.message).toBe(
      `the authorization server ${bare.auth.issuer} of MCP server 'notes' offers no dynamic client registration nor client metadata documents; register a client there and set its clientId in the server's oauth config`
    )

    const setup = await setUp(
      { clientId: "plugboard-preregistered", clientSecret: "preregistered-secret-0123456789" },
      clients
    )
    const { url } = await run(setup.connections.start(ALICE, "notes"))
    expect(new URL(url).searchParams.get("client_id")).toBe("plugboard-preregistered")
    expect(new URL(url).searchParams.get("code_challenge_method")).toBe("S256")
    expect(await signIn(browser, url, setup.callback.url, "alice")).toBe("connected notes")
    expect(await whoami(setup, ALICE)).toContain("you are alice")
    expect(await run(setup.connections.disconnect(ALICE, "notes"))).toEqual({
      removed: true,
      revocation: { outcome: "revoked" }
    })
    expect((await failure(setup.connections.accessToken(ALICE, "notes"))).reason).toBe("needs-connect")
  })

  it("a server whose metadata names another resource is refused before any token is asked", async () => {
    const setup = await setUp({}, () => ({}), { claimPath: "/elsewhere" })
    const error = await failure(setup.connections.start(ALICE, "notes"))
    expect(error.reason).toBe("invalid")
    expect(error.message).toBe(
      `MCP server 'notes' at ${setup.mcp.url} publishes metadata for another resource (${setup.mcp.url.replace("/mcp", "/elsewhere")}); refusing to send its tokens there`
    )
  })

  it("an unreachable MCP server is unreachable", async () => {
    const setup = await setUp()
    await setup.mcp.close()
    const error = await failure(setup.connections.start(ALICE, "notes"))
    expect(error.reason).toBe("unreachable")
    expect(error.message).toContain(
      `MCP server 'notes' at ${setup.mcp.url} cannot be reached to discover its OAuth`
    )
  })

  it("with the authorization server down, a valid token is still used and an expired one is kept for later", async () => {
    const setup = await setUp()
    const { url } = await run(setup.connections.start(ALICE, "notes"))
    expect(await signIn(browser, url, setup.callback.url, "alice")).toBe("connected notes")
    const token = await run(setup.connections.accessToken(ALICE, "notes"))
    await setup.auth.close()
    // 30 s before expiry: inside the refresh window; the refresh fails, the token still works.
    setup.clock.offsetMs = 3_600_000 - 30_000
    expect(await run(setup.connections.accessToken(ALICE, "notes"))).toBe(token)
    setup.clock.offsetMs = 3_600_000 + 1000
    const error = await failure(setup.connections.accessToken(ALICE, "notes"))
    expect(error.reason).toBe("unreachable")
    expect(error.message).toMatch(
      /^the access token to 'notes' expired and its authorization server could not renew it now \(.*\); try again later$/
    )
    expect(error.message).not.toContain(token)
    expect((await run(setup.connections.list(ALICE))).map((c) => c.connected)).toEqual([true])
  })
})
