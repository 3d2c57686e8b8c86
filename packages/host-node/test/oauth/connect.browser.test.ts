/**
 * Per-user OAuth to a remote MCP server, through real components only: the authorization server
 * is oidc-provider, the MCP server is built with the official SDK and its bearer-auth middleware,
 * the consent is clicked in Chromium, and each user's tokens live sealed (AES-256-GCM) in the
 * SQLite connection store. The calls go through plugboard's MCP pool, on one connection per user.
 *
 * Shown: two users connect their own accounts and each call is seen by the server as that user;
 * a used or forged state is refused; a token about to expire is refreshed (once, however many
 * calls ask at the same time); a revoked refresh token gives `needs-connect`, and the other user
 * is untouched; disconnecting revokes at the authorization server and forgets.
 *
 * The host routes (`/oauth/callback`, `/connections`) are not built yet: a small HTTP server
 * (fixtures/browserFlow.ts) plays the callback route, calling the same `complete` the route will.
 */
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { refreshAuthorization } from "@modelcontextprotocol/sdk/client/auth.js"
import { GraphState, makeRuntimeContext, TokenVault } from "@plugboard/core"
import {
  ConnectionsCipher,
  cacheToolList,
  McpConfig,
  McpPool,
  mcpSpecs,
  mountMcpServers,
  OAuthConnections,
  type OAuthError,
  userConnectionKey
} from "@plugboard/mcp"
import { connectionsFile, makeConnectionStore } from "@plugboard/sqlite"
import { Effect, Either, Exit, Scope } from "effect"
import type { Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { chromiumMissing, launch } from "../console/browser.js"
import { type AuthServer, startAuthServer } from "./fixtures/authServer.js"
import { type Callback, signIn, startCallback } from "./fixtures/browserFlow.js"
import { type ProtectedMcpServer, startMcpServer } from "./fixtures/mcpServer.js"
import { capturingLogger } from "./fixtures/outputs.js"

const missing = chromiumMissing()
const ALICE = "did:key:z6MkAlice"
const BOB = "did:key:z6MkBob"
const SERVER = "notes"

let auth: AuthServer
let mcp: ProtectedMcpServer
let browser: Browser
let callback: Callback
let callbackUrl: string
let dir: string
let scope: Scope.CloseableScope
let vault: TokenVault.TokenVaultService
let connections: OAuthConnections.Connections
let pool: McpPool
let offsetMs = 0
const tokenRequests: Array<string> = []
/** When set, a refresh request says it arrived and waits for the gate (a race, made deterministic). */
let refreshGate: { readonly arrived: () => void; readonly open: Promise<void> } | undefined
/** Every access and refresh token the authorization server issued in this file's tests. */
const issued = new Set<string>()
/** Every text these tests saw leave the library: log lines, error messages, callback pages, listings. */
const outputs: Array<string> = []
const logger = capturingLogger(outputs)

const run = <A>(effect: Effect.Effect<A, OAuthError>) => Effect.runPromise(effect)
const failure = async (effect: Effect.Effect<unknown, OAuthError>): Promise<OAuthError> => {
  const result = await Effect.runPromise(Effect.either(effect))
  if (Either.isRight(result)) throw new Error("expected an OAuthError")
  outputs.push(result.left.message, String(result.left))
  return result.left
}

beforeAll(async () => {
  if (missing !== undefined) return
  mcp = await startMcpServer()
  auth = await startAuthServer(() => mcp.url)
  await mcp.serve(auth.issuer)
  browser = await launch()
  dir = mkdtempSync(join(tmpdir(), "plugboard-oauth-"))
  scope = Effect.runSync(Scope.make())
  const store = await Effect.runPromise(
    Scope.extend(makeConnectionStore({ filename: connectionsFile(dir) }), scope)
  )
  const cipher = ConnectionsCipher.make(new Uint8Array(randomBytes(32)))
  vault = TokenVault.make(store, cipher)
  callback = await startCallback(() => connections)
  callbackUrl = callback.url
  connections = OAuthConnections.make({
    vault,
    cipher,
    redirectUri: callbackUrl,
    servers: [{ name: SERVER, url: mcp.url }],
    clientName: "plugboard test",
    now: () => Date.now() + offsetMs,
    connectHint: (server) => `open /oauth/start/${server} to connect`,
    // Every request the client makes, recorded by path (to count refreshes).
    fetch: async (url, init) => {
      const grant = init?.body instanceof URLSearchParams ? init.body.get("grant_type") : null
      if (grant !== null) tokenRequests.push(grant)
      if (grant === "refresh_token" && refreshGate !== undefined) {
        refreshGate.arrived()
        await refreshGate.open
      }
      const response = await fetch(url, init)
      if (grant !== null && response.ok) {
        const tokens = (await response.clone().json()) as { access_token?: string; refresh_token?: string }
        for (const token of [tokens.access_token, tokens.refresh_token]) if (token) issued.add(token)
      }
      return response
    }
  })
  pool = new McpPool({ logger })
}, 120_000)

afterAll(async () => {
  if (missing !== undefined) return
  await pool?.close()
  await browser?.close()
  await callback?.close()
  await mcp?.close()
  await auth?.close()
  if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

const serverConfig = () => {
  const parsed = McpConfig.parse({ mcpServers: { [SERVER]: { url: mcp.url } } })
  const server = parsed.servers[0]
  if (server === undefined) throw new Error(parsed.errors.join("\n"))
  return server
}

/** The user signs in as `login` and consents, in a browser profile of their own. */
const connectInBrowser = async (user: string, login: string): Promise<string> => {
  const { url } = await run(connections.start(user, SERVER))
  const page = await signIn(browser, url, callbackUrl, login)
  outputs.push(page)
  return page
}

/** A `whoami` call as `user`, through the pool on the user's own connection. */
const whoami = async (user: string): Promise<string> => {
  const headers = await run(connections.headers(user, SERVER))
  const output = await pool.call(
    serverConfig(),
    "whoami",
    {},
    {
      headers,
      connectionKey: userConnectionKey(SERVER, user)
    }
  )
  return JSON.stringify(output)
}

const contextFor = (did: string) =>
  makeRuntimeContext({ state: GraphState.initial({ did, client: "portal" }), sessionId: "s1", did })

/** The `whoami` tool as core's catalog gets it from an `auth: "oauth"` server (listed as alice). */
const oauthTool = async () => {
  const parsed = McpConfig.parse({ mcpServers: { [SERVER]: { url: mcp.url, auth: "oauth" } } })
  const server = parsed.servers[0]!
  const description = await pool.describe(server, {
    headers: await run(connections.headers(ALICE, SERVER)),
    connectionKey: userConnectionKey(SERVER, ALICE)
  })
  const [spec] = mcpSpecs([{ server, description, fromCache: false, warnings: [] }], {
    pool,
    oauth: connections
  })
  const tool = spec?.tools.find((t) => t.name === "whoami")
  if (tool === undefined) throw new Error("the server lists whoami")
  return { server, description, tool }
}

describe.skipIf(missing !== undefined)(
  "per-user OAuth to a remote MCP server (oidc-provider, SDK server, Chromium)",
  () => {
    it("a user who has not connected gets needs-connect, with what to do, and the server refuses no token", async () => {
      const error = await failure(connections.accessToken(ALICE, SERVER))
      expect(error.reason).toBe("needs-connect")
      expect(error.message).toBe(
        "MCP server 'notes' needs you to connect your account: this account is not connected; open /oauth/start/notes to connect."
      )
      const anonymous = await pool.call(serverConfig(), "whoami", {}, { connectionKey: "anonymous" }).then(
        () => "answered",
        (e: unknown) => String((e as Error).message)
      )
      expect(anonymous).toMatch(/HTTP 401.*invalid_token.*Missing Authorization header/)
    })

    it("two users connect their own accounts; each call is seen by the server as that user", async () => {
      expect(await connectInBrowser(ALICE, "alice")).toBe("connected notes")
      expect(await connectInBrowser(BOB, "bob")).toBe("connected notes")
      mcp.seen.length = 0
      expect(await whoami(ALICE)).toContain("you are alice")
      expect(await whoami(BOB)).toContain("you are bob")
      expect(await whoami(ALICE)).toContain("you are alice")
      expect(mcp.seen).toEqual(["alice", "bob", "alice"])
      const aliceToken = await run(connections.accessToken(ALICE, SERVER))
      const bobToken = await run(connections.accessToken(BOB, SERVER))
      expect(aliceToken).not.toBe(bobToken)
      const listed = await run(connections.list(ALICE))
      outputs.push(JSON.stringify(listed))
      expect(listed.map((c) => [c.server, c.connected, c.scope?.includes("mcp:tools")])).toEqual([
        [SERVER, true, true]
      ])
      expect(JSON.stringify(listed)).not.toContain(aliceToken)
    })

    it("mounted from the config: unavailable, saying why, until a connected user's list is cached; then each user calls as themselves", async () => {
      const cacheDir = join(dir, "mcp-cache")
      const config = { mcpServers: { [SERVER]: { url: mcp.url, auth: "oauth" } } }
      const reason =
        "MCP server 'notes' signs each user in with OAuth: its tools are listed with a connected user's token, and no list is cached yet (docs/oauth.md#the-tool-list)."
      const first = await mountMcpServers(config, { cacheDir, oauth: connections, logger })
      try {
        expect(first.warnings).toEqual([`${reason} Its plugin 'notes' is listed as unavailable.`])
        expect(first.specs.map((spec) => spec.unavailable)).toEqual([reason])
      } finally {
        await first.close()
      }
      const listed = await cacheToolList(first.servers[0]!, ALICE, { connections, pool, cacheDir })
      expect(listed.tools.map((t) => t.name)).toEqual(["whoami"])
      const second = await mountMcpServers(config, { cacheDir, oauth: connections, logger })
      try {
        expect(second.warnings).toEqual([])
        const tool = second.specs[0]?.tools.find((t) => t.name === "whoami")
        if (tool === undefined) throw new Error("the cached list has whoami")
        mcp.seen.length = 0
        expect(JSON.stringify(await tool.call({}, contextFor(BOB)))).toContain("you are bob")
        expect(JSON.stringify(await tool.call({}, contextFor(ALICE)))).toContain("you are alice")
        expect(mcp.seen).toEqual(["bob", "alice"])
      } finally {
        await second.close()
      }
    })

    it("a tool of an auth: oauth server calls as the turn's user; one not connected gets needs-connect, nothing sent", async () => {
      const { server, description, tool } = await oauthTool()
      mcp.seen.length = 0
      expect(JSON.stringify(await tool.call({}, contextFor(BOB)))).toContain("you are bob")
      expect(JSON.stringify(await tool.call({}, contextFor(ALICE)))).toContain("you are alice")
      await expect(tool.call({}, contextFor("did:key:z6MkCarol"))).rejects.toMatchObject({
        _tag: "OAuthError",
        reason: "needs-connect",
        message:
          "MCP server 'notes' needs you to connect your account: this account is not connected; open /oauth/start/notes to connect."
      })
      expect(mcp.seen).toEqual(["bob", "alice"])
      // A host without OAuth connections refuses the call with the reason, and sends nothing.
      const [bare] = mcpSpecs([{ server, description, fromCache: false, warnings: [] }], { pool })
      await expect(bare?.tools[0]?.call({}, contextFor(ALICE))).rejects.toThrow(
        "MCP server 'notes' signs each user in with OAuth, and this host keeps no OAuth connections (CONNECTIONS_KEY is unset); the call was not made."
      )
      expect(mcp.seen).toEqual(["bob", "alice"])
    })

    it("a token the MCP server refuses (401) is renewed once and the call sent again", async () => {
      const { tool } = await oauthTool()
      expect(JSON.stringify(await tool.call({}, contextFor(ALICE)))).toContain("you are alice")
      const refusedId = mcp.tokenIds.at(-1) ?? ""
      mcp.refused.add(refusedId)
      tokenRequests.length = 0
      mcp.seen.length = 0
      expect(JSON.stringify(await tool.call({}, contextFor(ALICE)))).toContain("you are alice")
      expect(tokenRequests).toEqual(["refresh_token"])
      expect(mcp.tokenIds.at(-1)).not.toBe(refusedId)
      expect(mcp.seen).toEqual(["alice"])
    })

    it("refuses a used state and a forged one", async () => {
      const { url } = await run(connections.start(ALICE, SERVER))
      const state = new URL(url).searchParams.get("state") ?? ""
      // A second start replaces the first flow: the first state is spent.
      await run(connections.start(ALICE, SERVER))
      const replaced = await failure(connections.complete({ state, code: "whatever" }))
      expect([replaced.reason, replaced.message]).toEqual([
        "refused",
        "this sign-in to 'notes' was already used or replaced by a newer one; start connecting again"
      ])
      const forged = await failure(connections.complete({ state: `${state.slice(0, -2)}xx`, code: "c" }))
      expect(forged.reason).toBe("refused")
      // Alice is still connected: a refused answer forgot nothing.
      expect(await whoami(ALICE)).toContain("you are alice")
    })

    it("a token about to expire is refreshed, once for concurrent calls, and the user is still seen", async () => {
      const before = await run(connections.accessToken(ALICE, SERVER))
      tokenRequests.length = 0
      offsetMs = 3_600_000 // an hour later: past the hour-long access token
      const tokens = await Promise.all([1, 2, 3].map(() => run(connections.accessToken(ALICE, SERVER))))
      expect(tokenRequests).toEqual(["refresh_token"])
      expect(new Set(tokens).size).toBe(1)
      expect(tokens[0]).not.toBe(before)
      mcp.tokenIds.length = 0
      expect(await whoami(ALICE)).toContain("you are alice")
      // No second refresh while the new token is fresh.
      expect(await run(connections.accessToken(ALICE, SERVER))).toBe(tokens[0])
      expect(tokenRequests).toEqual(["refresh_token"])
    })

    it("a revoked refresh token gives needs-connect; the other user is untouched", async () => {
      const secret = await Effect.runPromise(vault.get(ALICE, SERVER))
      const stored = secret as { tokens: { refresh_token: string }; client: { client_id: string } }
      const revoked = await fetch(`${auth.issuer}/token/revocation`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          token: stored.tokens.refresh_token,
          token_type_hint: "refresh_token",
          client_id: stored.client.client_id
        })
      })
      expect(revoked.status).toBe(200)
      offsetMs = 2 * 3_600_000
      const error = await failure(connections.accessToken(ALICE, SERVER))
      expect(error.reason).toBe("needs-connect")
      expect(error.message).toBe(
        "MCP server 'notes' needs you to connect your account: the authorization server refused to renew the connection (invalid_grant); open /oauth/start/notes to connect."
      )
      expect(error.message).not.toContain(stored.tokens.refresh_token)
      // Forgotten: the next use is a plain needs-connect, with no request to the server.
      tokenRequests.length = 0
      expect((await failure(connections.accessToken(ALICE, SERVER))).message).toContain(
        "this account is not connected"
      )
      expect(tokenRequests).toEqual([])
      expect((await run(connections.list(ALICE))).map((c) => c.connected)).toEqual([false])
      // Bob's connection refreshes and works as before.
      mcp.seen.length = 0
      expect(await whoami(BOB)).toContain("you are bob")
      expect(mcp.seen).toEqual(["bob"])
    })

    it("the user connects again after needs-connect", async () => {
      expect(await connectInBrowser(ALICE, "alice")).toBe("connected notes")
      expect(await whoami(ALICE)).toContain("you are alice")
    })

    it("a flow started while a refresh is in flight waits for it, and neither write is lost", async () => {
      offsetMs += 4 * 3_600_000
      let arrived!: () => void
      const reached = new Promise<void>((resolve) => {
        arrived = resolve
      })
      let open!: () => void
      refreshGate = { arrived, open: new Promise<void>((resolve) => (open = resolve)) }
      const refreshed = run(connections.accessToken(ALICE, SERVER))
      await reached
      // The refresh holds alice's record (it read it and will write it back): start must wait.
      const started = run(connections.start(ALICE, SERVER))
      open()
      refreshGate = undefined
      const [token, { url }] = await Promise.all([refreshed, started])
      expect(await run(connections.accessToken(ALICE, SERVER))).toBe(token)
      // The flow started in the meantime is intact: the consent completes it.
      const page = await signIn(browser, url, callbackUrl, "alice")
      outputs.push(page)
      expect(page).toBe("connected notes")
      expect(await whoami(ALICE)).toContain("you are alice")
    })

    it("disconnecting revokes at the authorization server and forgets", async () => {
      const secret = (await Effect.runPromise(vault.get(BOB, SERVER))) as {
        tokens: { refresh_token: string }
        client: { client_id: string }
      }
      const result = await run(connections.disconnect(BOB, SERVER))
      expect(result).toEqual({ removed: true, revocation: { outcome: "revoked" } })
      expect(await Effect.runPromise(vault.get(BOB, SERVER))).toBeUndefined()
      expect((await failure(connections.accessToken(BOB, SERVER))).reason).toBe("needs-connect")
      // The refresh token is dead at the authorization server too.
      await expect(
        refreshAuthorization(auth.issuer, {
          clientInformation: { client_id: secret.client.client_id },
          refreshToken: secret.tokens.refresh_token,
          resource: new URL(mcp.url)
        })
      ).rejects.toMatchObject({ errorCode: "invalid_grant" })
      // Alice is still connected.
      expect(await whoami(ALICE)).toContain("you are alice")
    })

    it("no access or refresh token appears in any log line, error, callback page or listing of these tests", async () => {
      outputs.push(
        JSON.stringify(await run(connections.list(ALICE))),
        JSON.stringify(await run(connections.list(BOB)))
      )
      // Tokens were issued (codes, refreshes, reconnects) and text was produced: the scan is not empty.
      expect(issued.size).toBeGreaterThanOrEqual(8)
      expect(outputs.length).toBeGreaterThan(10)
      const text = outputs.join("\n")
      const leaked = [...issued].filter((token) => text.includes(token) || text.includes(token.slice(0, 24)))
      expect(leaked).toEqual([])
    })
  }
)
