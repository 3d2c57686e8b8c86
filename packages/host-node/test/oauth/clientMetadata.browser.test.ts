/**
 * Client ID Metadata Documents (docs/oauth.md#client-identity) with the real components of
 * connect.browser.test.ts: `oidc-provider` 9 with `features.clientIdMetadataDocument`, the SDK's
 * MCP server with bearer auth, Chromium. The client's side (the document and the callback) is
 * served over TLS with a certificate made for this test, which the authorization server trusts
 * through its own fetch (no TLS check is turned off anywhere; the test's browser profile accepts
 * that certificate for the callback only).
 *
 * - An authorization server that advertises the documents: the client_id is the document's URL,
 *   the server fetched it, no registration request was made, the user's call runs as them, the
 *   refresh works with that identity, and the record says which identity was used; once the
 *   server stops accepting that client, the renewal is `needs-connect` naming the document.
 * - A preregistered client in the server's config wins over the document.
 * - One that does not advertise them: dynamic registration, the document never fetched.
 * - A host without an https document (an http `PUBLIC_URL`): registration, even where supported.
 * - A document the authorization server refuses (another client_id): the user sees its error, no
 *   token is issued, and once the document is right the next start connects.
 */
import { randomBytes } from "node:crypto"
import { createServer } from "node:https"
import type { AddressInfo } from "node:net"
import { ConnectionStore, TokenVault } from "@plugboard/core"
import {
  ClientMetadata,
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
import { signIn } from "./fixtures/browserFlow.js"
import { type ProtectedMcpServer, startMcpServer } from "./fixtures/mcpServer.js"
import { type Certificate, makeCertificate } from "./fixtures/tls.js"

const missing = chromiumMissing()
const ALICE = "did:key:z6MkAlice"
const closers: Array<() => Promise<void>> = []
let browser: Browser
let pool: McpPool
let tls: Certificate

const run = <A>(effect: Effect.Effect<A, OAuthError>) => Effect.runPromise(effect)

/**
 * The client's public side over TLS, as a host with an https `PUBLIC_URL` serves it: the
 * document (what `document()` gives, changeable by the test) and the callback.
 */
interface ClientSide {
  readonly base: string
  readonly documentUrl: string
  readonly callbackUrl: string
  /** How many times the document was fetched. */
  readonly hits: () => number
  document: Record<string, unknown>
}

const startClientSide = async (connections: () => OAuthConnections.Connections): Promise<ClientSide> => {
  let hits = 0
  const side = { document: {} as Record<string, unknown> }
  const server = createServer(tls, (req, res) => {
    const url = new URL(req.url ?? "/", "https://127.0.0.1")
    if (url.pathname === ClientMetadata.CLIENT_METADATA_PATH) {
      hits++
      res.writeHead(200, { "content-type": "application/json", "cache-control": "public, max-age=0" })
      res.end(JSON.stringify(side.document))
      return
    }
    void Effect.runPromise(Effect.either(connections().complete(Object.fromEntries(url.searchParams)))).then(
      (r) => {
        res.writeHead(Either.isRight(r) ? 200 : 400, { "content-type": "text/html" })
        res.end(
          Either.isRight(r)
            ? `<p>connected ${r.right.server}</p>`
            : `<p>${r.left.reason}: ${r.left.message}</p>`
        )
      }
    )
  })
  const port = await new Promise<number>((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port))
  )
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  )
  const base = `https://127.0.0.1:${port}`
  const documentUrl = ClientMetadata.urlFor(base)
  if (documentUrl === undefined) throw new Error("an https base has a document URL")
  const callbackUrl = `${base}/oauth/callback`
  side.document = { ...ClientMetadata.document({ clientId: documentUrl, redirectUri: callbackUrl }) }
  return Object.assign(side, { base, documentUrl, callbackUrl, hits: () => hits })
}

interface Setup {
  readonly mcp: ProtectedMcpServer
  readonly auth: AuthServer
  readonly side: ClientSide
  readonly connections: OAuthConnections.Connections
}

/** Whether the authorization server accepts the document's client (turned off to refuse it). */
let allowDocument = true

const setUp = async (opts: {
  advertise: boolean
  useDocument: boolean
  /** A client preregistered at the authorization server and named in the server's config. */
  preregistered?: string
}): Promise<Setup> => {
  let connections: OAuthConnections.Connections | undefined
  const side = await startClientSide(() => connections!)
  const mcp = await startMcpServer()
  closers.push(mcp.close)
  const auth = await startAuthServer(() => mcp.url, {
    ...(opts.advertise ? { clientIdMetadataDocument: { ca: tls.cert, allow: () => allowDocument } } : {}),
    ...(opts.preregistered === undefined
      ? {}
      : {
          clients: [
            {
              client_id: opts.preregistered,
              token_endpoint_auth_method: "none",
              redirect_uris: [side.callbackUrl],
              grant_types: ["authorization_code", "refresh_token"]
            }
          ]
        })
  })
  closers.push(auth.close)
  await mcp.serve(auth.issuer)
  const cipher = ConnectionsCipher.make(new Uint8Array(randomBytes(32)))
  connections = OAuthConnections.make({
    vault: TokenVault.make(ConnectionStore.makeMemory(), cipher),
    cipher,
    redirectUri: side.callbackUrl,
    clientMetadataUrl: opts.useDocument ? side.documentUrl : undefined,
    servers: [{ name: "notes", url: mcp.url, clientId: opts.preregistered }]
  })
  return { mcp, auth, side, connections }
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

const connect = async (setup: Setup, login: string) => {
  const { url } = await run(setup.connections.start(ALICE, "notes"))
  const text = await signIn(browser, url, setup.side.callbackUrl, login, "consent", {
    ignoreHTTPSErrors: true
  })
  return { url: new URL(url), text }
}

const registrations = (auth: AuthServer) => auth.requests.filter((r) => r === "POST /reg").length

beforeAll(async () => {
  if (missing !== undefined) return
  tls = makeCertificate()
  browser = await launch()
  pool = new McpPool()
}, 120_000)

afterAll(async () => {
  if (missing !== undefined) return
  await pool?.close()
  await browser?.close()
  for (const close of closers.reverse()) await close()
})

describe("the client metadata document", () => {
  it("names the host's callback as a public client, at an https URL only", () => {
    expect(ClientMetadata.urlFor("https://oracle.example.com/")).toBe(
      "https://oracle.example.com/oauth/client-metadata.json"
    )
    expect(ClientMetadata.urlFor("http://oracle.example.com")).toBeUndefined()
    expect(
      ClientMetadata.document({
        clientId: "https://oracle.example.com/oauth/client-metadata.json",
        redirectUri: "https://oracle.example.com/oauth/callback"
      })
    ).toEqual({
      client_id: "https://oracle.example.com/oauth/client-metadata.json",
      client_name: "plugboard",
      redirect_uris: ["https://oracle.example.com/oauth/callback"],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none"
    })
    for (const [bad, why] of [
      ["http://oracle.example.com/c.json", "is not https"],
      ["https://oracle.example.com/c.json#x", "has a fragment"],
      ["https://u:p@oracle.example.com/c.json", "carries user info"],
      ["https://oracle.example.com/a/../c.json", "has a dot segment"],
      ["not a url", "is not a URL"]
    ] as const) {
      expect(() => ClientMetadata.document({ clientId: bad, redirectUri: "https://x/cb" })).toThrow(why)
      expect(() =>
        OAuthConnections.make({
          vault: TokenVault.make(ConnectionStore.makeMemory(), ConnectionsCipher.make(new Uint8Array(32))),
          cipher: ConnectionsCipher.make(new Uint8Array(32)),
          redirectUri: "https://x/cb",
          clientMetadataUrl: bad,
          servers: []
        })
      ).toThrow(RangeError)
    }
  })
})

describe.skipIf(missing !== undefined)(
  "Client ID Metadata Documents (oidc-provider, SDK server, Chromium)",
  () => {
    it("signs in with the document's URL as client_id: fetched by the server, nothing registered", async () => {
      const setup = await setUp({ advertise: true, useDocument: true })
      const { url, text } = await connect(setup, "alice")
      expect(url.searchParams.get("client_id")).toBe(setup.side.documentUrl)
      expect(text).toBe("connected notes")
      expect(setup.auth.fetched).toContain(setup.side.documentUrl)
      expect(setup.side.hits()).toBeGreaterThan(0)
      expect(registrations(setup.auth)).toBe(0)
      expect(JSON.parse(await whoami(setup, ALICE)).content[0].text).toContain("alice")
      const [status] = await run(setup.connections.list(ALICE))
      expect(status).toMatchObject({ server: "notes", connected: true, identity: "metadata-document" })
      // The refresh presents the same client_id.
      const before = await run(setup.connections.accessToken(ALICE, "notes"))
      const renewed = await run(setup.connections.renew(ALICE, "notes"))
      expect(renewed).not.toBe(before)
      expect(JSON.parse(await whoami(setup, ALICE)).content[0].text).toContain("alice")
      expect(registrations(setup.auth)).toBe(0)
      // The server stops accepting the client: the renewal is needs-connect, naming the document.
      allowDocument = false
      try {
        const refused = await Effect.runPromise(Effect.flip(setup.connections.renew(ALICE, "notes")))
        expect(refused.reason).toBe("needs-connect")
        expect(refused.message).toContain("(invalid_client)")
        expect(refused.message).toContain(
          `it did not accept this host's client metadata document ${setup.side.documentUrl}`
        )
      } finally {
        allowDocument = true
      }
    }, 120_000)

    it("a preregistered client in the config wins over the document", async () => {
      const setup = await setUp({ advertise: true, useDocument: true, preregistered: "plugboard-operator" })
      const { url, text } = await connect(setup, "alice")
      expect(url.searchParams.get("client_id")).toBe("plugboard-operator")
      expect(text).toBe("connected notes")
      expect(setup.side.hits()).toBe(0)
      expect(registrations(setup.auth)).toBe(0)
      const [status] = await run(setup.connections.list(ALICE))
      expect(status).toMatchObject({ connected: true, identity: "configured" })
    }, 120_000)

    it("registers dynamically where the server does not advertise documents", async () => {
      const setup = await setUp({ advertise: false, useDocument: true })
      const { url, text } = await connect(setup, "alice")
      expect(text).toBe("connected notes")
      expect(url.searchParams.get("client_id")).not.toBe(setup.side.documentUrl)
      expect(registrations(setup.auth)).toBe(1)
      expect(setup.side.hits()).toBe(0)
      const [status] = await run(setup.connections.list(ALICE))
      expect(status).toMatchObject({ connected: true, identity: "registered" })
    }, 120_000)

    it("registers dynamically where the host has no https document (an http PUBLIC_URL)", async () => {
      const setup = await setUp({ advertise: true, useDocument: false })
      const { text } = await connect(setup, "alice")
      expect(text).toBe("connected notes")
      expect(registrations(setup.auth)).toBe(1)
      expect(setup.auth.fetched).toEqual([])
      const [status] = await run(setup.connections.list(ALICE))
      expect(status).toMatchObject({ connected: true, identity: "registered" })
    }, 120_000)

    it("a document the server refuses issues no token; fixed, the next start connects", async () => {
      const setup = await setUp({ advertise: true, useDocument: true })
      const good = setup.side.document
      setup.side.document = { ...good, client_id: `${setup.side.base}/another.json` }
      const { url } = await run(setup.connections.start(ALICE, "notes"))
      const context = await browser.newContext({ ignoreHTTPSErrors: true })
      try {
        const page = await context.newPage()
        const response = await page.goto(url)
        expect(response?.status()).toBe(400)
        expect(await page.content()).toContain("invalid_client")
      } finally {
        await context.close()
      }
      const [pending] = await run(setup.connections.list(ALICE))
      expect(pending).toMatchObject({ connected: false, identity: "metadata-document" })
      setup.side.document = good
      const { text } = await connect(setup, "alice")
      expect(text).toBe("connected notes")
      expect(registrations(setup.auth)).toBe(0)
    }, 120_000)
  }
)
