/**
 * Two hosts renewing one user's token at once (docs/oauth.md#several-hosts), with real components
 * only: two `OAuthConnections` (two "hosts", each with a pool of its own) over one PostgreSQL
 * `connections` table (a cluster of this file's own), oidc-provider rotating refresh tokens (and,
 * as OAuth's security practice asks, revoking the whole grant when a rotated one is used again),
 * the SDK's bearer-auth MCP server, Chromium for the consent.
 *
 * The race is made deterministic with gates, not sleeps: each host's read of the record under its
 * refresh returns only once both hosts hold the same record (refresh token R1); B's first write
 * waits for A's; B's token request, if it sends one, waits until A's has been answered and saved.
 * Before the compare-and-set, B sent R1 after A had rotated it: refused (`invalid_grant`, and the
 * grant revoked), B forgot the tokens over A's newer record, and the user was disconnected.
 */
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type ConnectionStore, TokenVault } from "@plugboard/core"
import {
  ConnectionsCipher,
  McpConfig,
  McpPool,
  OAuthConnections,
  type OAuthError,
  userConnectionKey
} from "@plugboard/mcp"
import { makeConnectionStore, makeDatabase } from "@plugboard/postgres"
import { Deferred, Effect, Exit, Scope } from "effect"
import type { Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { chromiumMissing, launch } from "../console/browser.js"
import { installed, type OwnEngine, ownPostgres } from "../ownEngines.js"
import { type AuthServer, startAuthServer } from "./fixtures/authServer.js"
import { type Callback, signIn, startCallback } from "./fixtures/browserFlow.js"
import { type ProtectedMcpServer, startMcpServer } from "./fixtures/mcpServer.js"

const skip = chromiumMissing() !== undefined || !installed.postgres
const ALICE = "did:key:z6MkAlice"
const BOB = "did:key:z6MkBob"
const CAROL = "did:key:z6MkCarol"
const SERVER = "notes"
const CLAIM_MS = 30_000
const cipher = ConnectionsCipher.make(new Uint8Array(randomBytes(32)))

type Name = "a" | "b"

/** The gates of one race (undefined outside a race). */
interface Race {
  /** Reads of the record per host since the race began. */
  readonly reads: Record<Name, number>
  /** Both hosts hold the record their refresh decides on (their second read). */
  readonly bothRead: Deferred.Deferred<void>
  /** A has written once (B's first write waits for it). */
  readonly aWrote: Deferred.Deferred<void>
  /** A's token request was answered, and A wrote after it. */
  readonly aSaved: Deferred.Deferred<void>
  aAnswered: boolean
  writes: Record<Name, number>
  /** Conditional writes per host that did not apply (another writer came first). */
  readonly conflicts: Record<Name, number>
}

let race: Race | undefined
let pg: OwnEngine
let auth: AuthServer
let mcp: ProtectedMcpServer
let browser: Browser
let callback: Callback
let dir: string
let scope: Scope.CloseableScope
let pool: McpPool
/** The refresh requests each host sent, in order. */
const refreshes: Array<Name> = []
/** What each host's clock adds to the real one (to let a claim expire). */
const offsetMs: Record<Name, number> = { a: 0, b: 0 }
/** A's refresh requests wait on this when set (held, or a host that stopped while renewing). */
let aHeld: Promise<unknown> | undefined

const hosts = {} as Record<Name, OAuthConnections.Connections>

const gated = (
  name: Name,
  store: ConnectionStore.ConnectionStoreService
): ConnectionStore.ConnectionStoreService => {
  const wrote = <A>(applied: Effect.Effect<A, ConnectionStore.ConnectionStoreError>) =>
    Effect.gen(function* () {
      const r = race
      if (r !== undefined && name === "b" && r.writes.b === 0) yield* Deferred.await(r.aWrote)
      const result = yield* applied
      if (r !== undefined) {
        r.writes[name] += 1
        if (name === "a") {
          yield* Deferred.succeed(r.aWrote, undefined)
          if (r.aAnswered) yield* Deferred.succeed(r.aSaved, undefined)
        }
      }
      return result
    })
  return {
    ...store,
    get: (user, server) =>
      Effect.tap(store.get(user, server), () =>
        Effect.gen(function* () {
          const r = race
          if (r === undefined) return
          r.reads[name] += 1
          if (r.reads.a >= 2 && r.reads.b >= 2) yield* Deferred.succeed(r.bothRead, undefined)
          if (r.reads[name] === 2) yield* Deferred.await(r.bothRead)
        })
      ),
    put: (...args) => wrote(store.put(...args)),
    compareAndSet: (...args) =>
      Effect.tap(wrote(store.compareAndSet(...args)), (applied) => {
        if (!applied && race !== undefined) race.conflicts[name] += 1
      })
  }
}

const makeHost = async (name: Name) => {
  const db = await Effect.runPromise(
    Scope.extend(makeDatabase({ url: pg.url, schema: "several_hosts", maxConnections: 4 }), scope)
  )
  const vault = TokenVault.make(gated(name, makeConnectionStore(db)), cipher)
  hosts[name] = OAuthConnections.make({
    vault,
    cipher,
    redirectUri: callback.url,
    servers: [{ name: SERVER, url: mcp.url }],
    clientName: "plugboard test",
    now: () => Date.now() + offsetMs[name],
    renewClaimMs: CLAIM_MS,
    fetch: async (url, init) => {
      const grant = init?.body instanceof URLSearchParams ? init.body.get("grant_type") : null
      if (grant === "refresh_token") {
        refreshes.push(name)
        if (name === "a" && aHeld !== undefined) await aHeld
        if (name === "b" && race !== undefined) await Effect.runPromise(Deferred.await(race.aSaved))
      }
      const response = await fetch(url, init)
      if (grant === "refresh_token" && name === "a" && race !== undefined) race.aAnswered = true
      return response
    }
  })
}

const startRace = (): Race => {
  race = {
    reads: { a: 0, b: 0 },
    writes: { a: 0, b: 0 },
    conflicts: { a: 0, b: 0 },
    bothRead: Effect.runSync(Deferred.make<void>()),
    aWrote: Effect.runSync(Deferred.make<void>()),
    aSaved: Effect.runSync(Deferred.make<void>()),
    aAnswered: false
  }
  return race
}

const run = <A>(effect: Effect.Effect<A, OAuthError>) => Effect.runPromise(effect)

/** A `whoami` call as `user` (alice) through `host`, on the pool's connection for them. */
const whoami = async (host: Name, user = ALICE): Promise<string> => {
  const parsed = McpConfig.parse({ mcpServers: { [SERVER]: { url: mcp.url } } })
  const server = parsed.servers[0]
  if (server === undefined) throw new Error(parsed.errors.join("\n"))
  const headers = await run(hosts[host].headers(user, SERVER))
  return JSON.stringify(
    await pool.call(
      server,
      "whoami",
      {},
      { headers, connectionKey: `${host}:${userConnectionKey(SERVER, user)}` }
    )
  )
}

beforeAll(async () => {
  if (skip) return
  pg = await ownPostgres()
  mcp = await startMcpServer()
  auth = await startAuthServer(() => mcp.url)
  await mcp.serve(auth.issuer)
  browser = await launch()
  dir = mkdtempSync(join(tmpdir(), "plugboard-oauth-hosts-"))
  scope = Effect.runSync(Scope.make())
  callback = await startCallback(() => hosts.a)
  await makeHost("a")
  await makeHost("b")
  pool = new McpPool()
  const { url } = await run(hosts.a.start(ALICE, SERVER))
  expect(await signIn(browser, url, callback.url, "alice")).toBe("connected notes")
}, 180_000)

afterAll(async () => {
  if (skip) return
  await pool?.close()
  await browser?.close()
  await callback?.close()
  await mcp?.close()
  await auth?.close()
  if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
  await pg?.remove()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

describe.skipIf(skip)("two hosts renewing one user's token at once, over one Postgres", () => {
  it("both renew at once: one refresh reaches the authorization server, both hosts get its token, and the user stays connected", async () => {
    expect(await whoami("b")).toContain("you are alice")
    const before = await run(hosts.b.accessToken(ALICE, SERVER))
    const r = startRace()
    const [a, b] = await Promise.all([run(hosts.a.renew(ALICE, SERVER)), run(hosts.b.renew(ALICE, SERVER))])
    race = undefined
    // Both held the same record; B's write over it (its claim) did not apply, A's did.
    expect(r.conflicts).toEqual({ a: 0, b: 1 })
    expect(a).not.toBe(before)
    expect(b).toBe(a)
    // One refresh only: B never sent the refresh token A's renewal had rotated away.
    expect(refreshes).toEqual(["a"])
    for (const host of ["a", "b"] as const) {
      expect(await run(hosts[host].list(ALICE))).toMatchObject([{ server: SERVER, connected: true }])
      expect(await run(hosts[host].accessToken(ALICE, SERVER))).toBe(a)
    }
    expect(await whoami("b")).toContain("you are alice")
    // The grant is alive at the authorization server: the next renewal (B's) works, and its token too.
    const next = await run(hosts.b.renew(ALICE, SERVER))
    expect(next).not.toBe(a)
    expect(refreshes).toEqual(["a", "b"])
    expect(await whoami("a")).toContain("you are alice")
  }, 60_000)

  it("a flow started on B while A renews: A's tokens and B's flow both survive (neither write is lost)", async () => {
    const first = await run(hosts.a.start(BOB, SERVER))
    expect(await signIn(browser, first.url, callback.url, "bob")).toBe("connected notes")
    const before = await run(hosts.a.accessToken(BOB, SERVER))
    refreshes.length = 0
    const release = Effect.runSync(Deferred.make<void>())
    aHeld = Effect.runPromise(Deferred.await(release))
    const renewing = run(hosts.a.renew(BOB, SERVER))
    await expect.poll(() => refreshes).toEqual(["a"])
    // B starts a flow over the record A read (and claimed); then A's refresh is answered.
    const flow = await run(hosts.b.start(BOB, SERVER))
    aHeld = undefined
    await Effect.runPromise(Deferred.succeed(release, undefined))
    const renewed = await renewing
    expect(renewed).not.toBe(before)
    // A's write met B's: it read again, and wrote its tokens keeping B's flow.
    expect(await run(hosts.b.accessToken(BOB, SERVER))).toBe(renewed)
    expect(await whoami("b", BOB)).toContain("you are bob")
    expect(await signIn(browser, flow.url, callback.url, "bob")).toBe("connected notes")
    expect(await whoami("a", BOB)).toContain("you are bob")
  }, 60_000)

  it("a disconnect on B while A renews is not undone: A's refused renewal writes nothing back", async () => {
    const first = await run(hosts.a.start(CAROL, SERVER))
    expect(await signIn(browser, first.url, callback.url, "carol")).toBe("connected notes")
    refreshes.length = 0
    const release = Effect.runSync(Deferred.make<void>())
    aHeld = Effect.runPromise(Deferred.await(release))
    const renewing = Effect.runPromise(Effect.either(hosts.a.renew(CAROL, SERVER)))
    await expect.poll(() => refreshes).toEqual(["a"])
    // B disconnects (revoking the refresh token A is about to send); then A's request goes out.
    const disconnected = await run(hosts.b.disconnect(CAROL, SERVER))
    expect(disconnected).toMatchObject({ removed: true, revocation: { outcome: "revoked" } })
    aHeld = undefined
    await Effect.runPromise(Deferred.succeed(release, undefined))
    const renewed = await renewing
    expect(renewed._tag === "Left" && renewed.left.reason).toBe("needs-connect")
    for (const host of ["a", "b"] as const) expect(await run(hosts[host].list(CAROL))).toEqual([])
  }, 60_000)

  it("a host that stopped while renewing holds its claim only until it expires: the other host renews then", async () => {
    refreshes.length = 0
    aHeld = new Promise<never>(() => undefined)
    const before = await run(hosts.a.accessToken(ALICE, SERVER))
    // A claims the renewal and its request never reaches the authorization server (it stopped).
    void Effect.runPromise(Effect.either(hosts.a.renew(ALICE, SERVER)))
    await expect.poll(() => refreshes).toEqual(["a"])
    // B, once the claim is past its time, renews on its own.
    offsetMs.b = CLAIM_MS + 1_000
    const renewed = await run(hosts.b.renew(ALICE, SERVER))
    expect(renewed).not.toBe(before)
    expect(refreshes).toEqual(["a", "b"])
    expect(await whoami("b")).toContain("you are alice")
    expect(await run(hosts.b.list(ALICE))).toMatchObject([{ server: SERVER, connected: true }])
  }, 60_000)
})
