/**
 * The host's Client ID Metadata Document (docs/oauth.md#client-identity) through the whole server
 * (`createOracleApp`, via the test helper `start`): `GET /oauth/client-metadata.json` and the
 * identity the host's connections use. Behind a TLS-terminating proxy (a certificate made for
 * the run, `fixtures/tls.ts`) the host's `PUBLIC_URL` is https: an `oidc-provider` that accepts
 * documents fetches the host's, and a user connects through `POST /connections/notes` and the
 * host's callback with no client registered. With the listen address (http) as public URL the
 * route says why there is no document, and the host registers a client instead.
 */
import { randomBytes } from "node:crypto"
import { request as httpsRequest } from "node:https"
import type { Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { chromiumMissing, launch } from "../console/browser.js"
import { call, type Running, start, user } from "../helpers.js"
import { type AuthServer, startAuthServer } from "./fixtures/authServer.js"
import { signIn } from "./fixtures/browserFlow.js"
import { type ProtectedMcpServer, startMcpServer } from "./fixtures/mcpServer.js"
import { type Certificate, makeCertificate, startTlsProxy, type TlsProxy } from "./fixtures/tls.js"

const missing = chromiumMissing()
const closers: Array<() => Promise<void>> = []
let browser: Browser
let tls: Certificate
let mcp: ProtectedMcpServer
let auth: AuthServer

/** A GET over TLS trusting the run's certificate only. */
const getTls = (url: string, ca: string) =>
  new Promise<{ status: number; headers: Record<string, unknown>; body: string }>((resolve, reject) => {
    const req = httpsRequest(url, { ca }, (res) => {
      let body = ""
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => {
        body += chunk
      })
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
    })
    req.on("error", reject)
    req.end()
  })

const host = async (publicUrl?: string): Promise<Running> => {
  const running = await start({
    plugins: [],
    mcpServers: { mcpServers: { notes: { url: mcp.url, auth: "oauth" } } },
    env: {
      CONNECTIONS_KEY: randomBytes(32).toString("hex"),
      ...(publicUrl === undefined ? {} : { PUBLIC_URL: publicUrl })
    }
  })
  closers.push(running.stop)
  return running
}

const registrations = () => auth.requests.filter((r) => r === "POST /reg").length

beforeAll(async () => {
  if (missing !== undefined) return
  tls = makeCertificate()
  browser = await launch()
  mcp = await startMcpServer()
  closers.push(mcp.close)
  auth = await startAuthServer(() => mcp.url, { clientIdMetadataDocument: { ca: tls.cert } })
  closers.push(auth.close)
  await mcp.serve(auth.issuer)
}, 120_000)

afterAll(async () => {
  if (missing !== undefined) return
  await browser?.close()
  for (const close of closers.reverse()) await close()
})

describe.skipIf(missing !== undefined)("the host's client metadata document", () => {
  it("an https PUBLIC_URL: the document is served, fetched by the server, and a user connects with no registration", async () => {
    const proxy: TlsProxy = await startTlsProxy(tls)
    closers.push(proxy.close)
    const running = await host(proxy.url)
    proxy.target = running.url
    const documentUrl = `${proxy.url}/oauth/client-metadata.json`
    const served = await getTls(documentUrl, tls.cert)
    expect(served.status).toBe(200)
    expect(served.headers["cache-control"]).toContain("public")
    expect(JSON.parse(served.body)).toEqual({
      client_id: documentUrl,
      client_name: "plugboard",
      redirect_uris: [`${proxy.url}/oauth/callback`],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none"
    })
    const before = registrations()
    const alice = await user(running.app.oracleDid)
    const started = await call(`${running.url}/connections/notes`, { method: "POST", headers: alice.headers })
    expect(started.status).toBe(200)
    const url = new URL(started.body.url)
    expect(url.searchParams.get("client_id")).toBe(documentUrl)
    expect(url.searchParams.get("redirect_uri")).toBe(`${proxy.url}/oauth/callback`)
    const text = await signIn(browser, url.href, `${proxy.url}/oauth/callback`, "alice", "consent", {
      ignoreHTTPSErrors: true
    })
    expect(text).toContain("Your account is connected to 'notes'")
    expect(auth.fetched).toContain(documentUrl)
    expect(registrations()).toBe(before)
    const listed = await call(`${running.url}/connections`, { headers: alice.headers })
    expect(listed.body.connections).toMatchObject([
      { server: "notes", connected: true, identity: "metadata-document" }
    ])
  }, 120_000)

  it("an http public URL: no document (404 saying why), and the host registers a client instead", async () => {
    const running = await host()
    const answer = await call(`${running.url}/oauth/client-metadata.json`)
    expect(answer.status).toBe(404)
    expect(answer.body).toMatchObject({ error: "no-client-metadata" })
    expect(answer.body.message).toContain("PUBLIC_URL is not https")
    const before = registrations()
    const bob = await user(running.app.oracleDid)
    const started = await call(`${running.url}/connections/notes`, { method: "POST", headers: bob.headers })
    expect(started.status).toBe(200)
    expect(new URL(started.body.url).searchParams.get("client_id")).not.toContain("client-metadata.json")
    expect(registrations()).toBe(before + 1)
    const listed = await call(`${running.url}/connections`, { headers: bob.headers })
    expect(listed.body.connections).toMatchObject([
      { server: "notes", connected: false, identity: "registered" }
    ])
  }, 120_000)

  it("a host without OAuth servers has no document", async () => {
    const running = await start()
    closers.push(running.stop)
    const answer = await call(`${running.url}/oauth/client-metadata.json`)
    expect(answer.status).toBe(404)
    expect(answer.body).toMatchObject({ error: "no-oauth-servers" })
  })
})
