/**
 * What the OAuth connections refuse before any request leaves the process: a bad user or server
 * name, a server that is not configured for OAuth, a callback without a state this host sealed
 * (absent, forged, sealed under another key, of another shape), and a stored record that does not
 * open or has another shape. Each is a clear `OAuthError`; the fetch given to the connections
 * fails the test if it is ever called. The flow itself, against real servers, is in
 * packages/host-node/test/oauth.
 */
import { randomBytes } from "node:crypto"
import { ConnectionStore, TokenVault } from "@plugboard/core"
import { Effect, Either } from "effect"
import { describe, expect, it } from "vitest"
import * as Cipher from "../../src/oauth/Cipher.js"
import * as OAuthConnections from "../../src/oauth/Connections.js"
import type { OAuthError } from "../../src/oauth/OAuthError.js"

const ALICE = "did:key:z6MkAlice"

const setup = () => {
  const cipher = Cipher.make(new Uint8Array(randomBytes(32)))
  const store = ConnectionStore.makeMemory()
  const vault = TokenVault.make(store, cipher)
  const requests: Array<string> = []
  const connections = OAuthConnections.make({
    vault,
    cipher,
    redirectUri: "http://127.0.0.1:1/oauth/callback",
    servers: [{ name: "notes", url: "http://127.0.0.1:1/mcp" }],
    fetch: async (url) => {
      requests.push(String(url))
      throw new Error(`no request may be sent here, got ${String(url)}`)
    }
  })
  return { cipher, store, vault, connections, requests }
}

const failure = async (effect: Effect.Effect<unknown, OAuthError>): Promise<OAuthError> => {
  const result = await Effect.runPromise(Effect.either(effect))
  if (Either.isRight(result)) throw new Error("expected an OAuthError")
  return result.left
}

describe("OAuth connections: refused before any request", () => {
  it("a bad user or server name, or a server not configured for OAuth", async () => {
    const { connections, requests } = setup()
    const empty = await failure(connections.start("", "notes"))
    expect([empty.reason, empty.message]).toEqual(["invalid", "a user must be a DID of 1 to 2048 characters"])
    const badName = await failure(connections.start(ALICE, "Not_Kebab"))
    expect(badName.reason).toBe("invalid")
    expect(badName.message).toContain("is not a server name (kebab-case")
    const unknown = await failure(connections.start(ALICE, "github"))
    expect([unknown.reason, unknown.message]).toEqual([
      "invalid",
      "'github' is not a server that signs in with OAuth"
    ])
    expect((await failure(connections.accessToken(ALICE, "github"))).reason).toBe("invalid")
    expect((await failure(connections.accessToken("", "notes"))).reason).toBe("invalid")
    expect((await failure(connections.disconnect(ALICE, "github"))).reason).toBe("invalid")
    expect(requests).toEqual([])
  })

  it("a user never connected gets needs-connect, and listing shows nothing", async () => {
    const { connections, requests } = setup()
    const error = await failure(connections.accessToken(ALICE, "notes"))
    expect([error.reason, error.message]).toEqual([
      "needs-connect",
      "MCP server 'notes' needs you to connect your account: this account is not connected; connect your account to 'notes' and try again."
    ])
    expect(await Effect.runPromise(connections.list(ALICE))).toEqual([])
    expect(await Effect.runPromise(connections.disconnect(ALICE, "notes"))).toEqual({
      removed: false,
      revocation: { outcome: "unsupported" }
    })
    expect(requests).toEqual([])
  })

  it("a callback without a state this host sealed is refused", async () => {
    const { connections, requests } = setup()
    const other = Cipher.make(new Uint8Array(randomBytes(32)))
    const states = [
      undefined,
      "",
      "not-a-state",
      other.seal(JSON.stringify([ALICE, "notes", "n"]), "plugboard/oauth-state"),
      setup().cipher.seal(JSON.stringify([ALICE, "notes", "n"]), "another-context")
    ]
    for (const state of states) {
      const error = await failure(connections.complete({ state, code: "c" }))
      expect([error.reason, error.message]).toEqual([
        "refused",
        "this sign-in answer carries no state this host issued; start connecting again"
      ])
    }
    expect(requests).toEqual([])
  })

  it("a sealed state of another shape, or for a flow never started, is refused", async () => {
    const { cipher, connections, requests } = setup()
    for (const value of [[ALICE, "notes"], { user: ALICE }, [ALICE, "notes", 3]]) {
      const error = await failure(
        connections.complete({
          state: cipher.seal(JSON.stringify(value), "plugboard/oauth-state"),
          code: "c"
        })
      )
      expect(error.message).toBe(
        "this sign-in answer carries no state this host issued; start connecting again"
      )
    }
    const never = await failure(
      connections.complete({
        state: cipher.seal(JSON.stringify([ALICE, "notes", "n"]), "plugboard/oauth-state")
      })
    )
    expect([never.reason, never.message]).toEqual([
      "refused",
      "this sign-in to 'notes' was already used or replaced by a newer one; start connecting again"
    ])
    expect(requests).toEqual([])
  })

  it("a stored record that does not open, or has another shape, is needs-connect and listed with why", async () => {
    const { store, vault, connections, requests } = setup()
    await Effect.runPromise(store.put(ALICE, "notes", "pbc1.AAAA", 5))
    const sealed = await failure(connections.accessToken(ALICE, "notes"))
    expect([sealed.reason, sealed.message]).toEqual([
      "needs-connect",
      "MCP server 'notes' needs you to connect your account: the stored connection does not open with this host's key; connect your account to 'notes' and try again."
    ])
    await Effect.runPromise(vault.put(ALICE, "notes", { v: 2, tokens: "x" }, 6))
    const shape = await failure(connections.accessToken(ALICE, "notes"))
    expect(shape.reason).toBe("needs-connect")
    expect(shape.message).toContain("the stored connection has an unknown format (")
    const listed = await Effect.runPromise(connections.list(ALICE))
    expect(listed.map((c) => [c.server, c.connected, c.updatedAtMs])).toEqual([["notes", false, 6]])
    expect(listed[0]?.problem).toContain("unknown format")
    expect(requests).toEqual([])
  })
})
